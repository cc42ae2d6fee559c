/** A session's title: the first line of its first message (a message of files only: their names), cut at a word near 60 characters. */
export function titleFrom(text: string, files: ReadonlyArray<{ name: string }> = []): string {
  const line = (text.trim() || files.map((file) => file.name).join(', ')).split('\n')[0].replace(/\s+/g, ' ')
  if (line.length <= 60) return line
  const cut = line.slice(0, 60)
  const space = cut.lastIndexOf(' ')
  return (space > 30 ? cut.slice(0, space) : cut) + '…'
}
