/**
 * The Stop map (README.md "What happens when you press Stop", and docs/architecture.md's path):
 * every file a step names exists, and declares the function (or method, or class) named with it,
 * so the map cannot point a reader at a file or a name that moved.
 */
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

/** The section of `file` under `heading`, up to the next heading of its level or higher. */
function section(file: string, heading: string): string {
  const text = readFileSync(file, 'utf8')
  const start = text.indexOf(heading)
  if (start < 0) throw new Error(`${file} has no "${heading}"`)
  const level = heading.match(/^#+/)![0].length
  const next = text.slice(start + heading.length).search(new RegExp(`\\n#{1,${level}} `))
  return next < 0 ? text.slice(start) : text.slice(start, start + heading.length + next)
}

/** Every [`name`](path) link of a section: the name a step gives and the file it is in. */
function links(text: string): Array<{ name: string; target: string }> {
  return [...text.matchAll(/\[`([^`]+)`\]\(([^)\s]+)\)/g)].map((m) => ({ name: m[1], target: m[2] }))
}

/** Whether `source` declares `name`: a function, class, const, method, or (for SQL) a function of that name. */
function declares(source: string, name: string): boolean {
  const n = name.replace(/[$]/g, '\\$')
  return new RegExp(
    `(function\\*?|const|let|class|interface|type)\\s+${n}\\b|^\\s*(export\\s+)?(private\\s+|public\\s+)?(async\\s+)?${n}\\s*[(<]|create or replace function ${n}\\b`,
    'm',
  ).test(source)
}

/** Each map, and where its way back (from the log to every tab) begins: the two legs are read apart. */
const MAPS = [
  { file: 'README.md', heading: '## What happens when you press Stop', wayBack: /^The way back/m },
  { file: 'docs/architecture.md', heading: '## The Stop path', wayBack: /^\| 6 /m },
]

/** The files a leg enters again after leaving them for another: a leg that reads forward has none. */
function reentered(leg: string): string[] {
  const files = links(leg).map(({ target }) => target)
  return files.filter((file, i) => i > 0 && files[i - 1] !== file && files.slice(0, i - 1).includes(file))
}

describe.each(MAPS)('the Stop map in $file', ({ file, heading, wayBack }) => {
  const text = section(file, heading)
  const steps = links(text)

  it('reads forward: the way out, and the way back, each enter a file once', () => {
    const back = text.search(wayBack)
    expect(back).toBeGreaterThan(0)
    expect({ out: reentered(text.slice(0, back)), back: reentered(text.slice(back)) }).toEqual({ out: [], back: [] })
  })

  it('names files and functions, in steps', () => {
    expect(steps.length).toBeGreaterThan(10)
  })

  it('names only files that exist, each declaring the name given with it', () => {
    const missing = steps.filter(({ name, target }) => {
      const where = path.join(path.dirname(file), decodeURIComponent(target))
      return !existsSync(where) || !declares(readFileSync(where, 'utf8'), name)
    })
    expect(missing).toEqual([])
  })
})
