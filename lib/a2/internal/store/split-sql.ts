/**
 * Splits a migration's text into its statements. PGlite (and any driver using the extended
 * query protocol) runs one statement per call, so a migration cannot be sent whole. A `;`
 * ends a statement only outside comments, quotes and dollar-quoted bodies (PL/pgSQL
 * functions are full of `;`). Comments before a statement stay with it; a piece holding
 * nothing but comments and blanks is dropped.
 */
export function splitStatements(text: string): string[] {
  const statements: string[] = []
  let start = 0
  let i = 0
  const skipTo = (needle: string, from: number) => {
    const at = text.indexOf(needle, from)
    if (at < 0) throw new Error(`unterminated ${JSON.stringify(needle)} in SQL at offset ${from}`)
    return at + needle.length
  }
  while (i < text.length) {
    const c = text[i]
    if (c === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i)
      i = end < 0 ? text.length : end + 1
    } else if (c === '/' && text[i + 1] === '*') {
      i = skipTo('*/', i + 2)
    } else if (c === "'" || c === '"') {
      // A doubled quote inside ('it''s') is two quoted runs back to back: same result.
      i = skipTo(c, i + 1)
    } else if (c === '$') {
      const tag = /^\$[A-Za-z_]*\$/.exec(text.slice(i))?.[0]
      i = tag ? skipTo(tag, i + tag.length) : i + 1
    } else if (c === ';') {
      statements.push(text.slice(start, i + 1))
      i += 1
      start = i
    } else {
      i += 1
    }
  }
  statements.push(text.slice(start))
  return statements.map((s) => s.trim()).filter((s) => !isOnlyComments(s))
}

function isOnlyComments(statement: string): boolean {
  return (
    statement
      .replace(/--[^\n]*/g, '')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .trim()
      .replace(/;$/, '') === ''
  )
}
