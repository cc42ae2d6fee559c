/**
 * The offline model's answer about the files it was given, so `npm run dev` shows attachments
 * end to end with no network: each file's name, type and size, a text file's first lines, a
 * PDF's page count, and, for an image it was not sent, that it cannot see it. It reads what
 * lib/files/extract.ts writes (a header line per file, then the text) or, configured to take
 * files, the AI SDK file parts themselves.
 */
import type { LanguageModelV4Prompt } from '@ai-sdk/provider'
import { ATTACHMENT_HEADER, formatBytes } from '@/lib/files/extract'

const HEADER = /^\[Attached file "(.*)" — ([^,\]]+), ([^,\]:]+?)(?:, (\d+) pages?)?(?:, first \d+ of \d+ characters)?(: [^\]]*)?\]\n?/

export const isAttachmentText = (text: string) => text.startsWith(ATTACHMENT_HEADER)

const KIND: Record<string, string> = {
  'text/plain': 'a text file',
  'application/pdf': 'a PDF',
  'image/png': 'a PNG image',
  'image/jpeg': 'a JPEG image',
  'image/webp': 'a WebP image',
  'image/gif': 'a GIF image',
}

/** Markdown about the last user message's files, or undefined when it has none. */
export function describeAttachments(prompt: LanguageModelV4Prompt): string | undefined {
  const last = [...prompt].reverse().find((message) => message.role === 'user')
  if (!last || typeof last.content === 'string') return undefined
  const lines: string[] = []
  for (const part of last.content) {
    if (part.type === 'text' && isAttachmentText(part.text)) {
      const match = HEADER.exec(part.text)
      if (!match) continue
      const [header, name, mediaType, size, pages, note] = match
      const kind = KIND[mediaType] ?? mediaType
      let line = `- **${name}** — ${kind}${pages ? `, ${pages} page${pages === '1' ? '' : 's'}` : ''}, ${size}.`
      if (note?.includes('cannot see')) line += " I can't see images, so I know only its name, type and size."
      else if (note) line += ` (${note.slice(2)})`
      else if (mediaType === 'text/plain') {
        const first = part.text
          .slice(header.length)
          .split('\n')
          .filter((l) => l.trim())
          .slice(0, 3)
        if (first.length > 0) line += ` It begins:\n${first.map((l) => `  > ${l.slice(0, 200)}`).join('\n')}`
      }
      lines.push(line)
    } else if (part.type === 'file') {
      const size = part.data.type === 'data' && part.data.data instanceof Uint8Array ? `, ${formatBytes(part.data.data.byteLength)}` : ''
      lines.push(`- **${part.filename ?? 'a file'}** — ${KIND[part.mediaType] ?? part.mediaType}${size}, sent to me as a file.`)
    }
  }
  if (lines.length === 0) return undefined
  return `You gave me ${lines.length === 1 ? 'one file' : `${lines.length} files`}:\n\n${lines.join('\n')}`
}
