/**
 * What a model that cannot take a file as is gets instead: a one-line header (name, type, size,
 * a PDF's page count) and the file's text within `maxChars` (a text file's, or a PDF's as
 * unpdf extracts it), or for an image, one line saying it was not sent. The header's shape is
 * what the offline model reads (lib/ai/offline-files.ts): keep the two together.
 */
import { extractText, getDocumentProxy } from 'unpdf'
import { isImage, PDF_TYPE, TEXT_TYPE } from './sniff'

export const ATTACHMENT_HEADER = '[Attached file'

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

export async function pdfFacts(bytes: Uint8Array): Promise<{ pages: number; text: string } | undefined> {
  try {
    // unpdf (pdf.js) may take over the buffer it is given: it gets its own copy.
    const document = await getDocumentProxy(new Uint8Array(bytes))
    const { text } = await extractText(document, { mergePages: true })
    const pages = document.numPages
    await document.cleanup()
    return { pages, text }
  } catch {
    return undefined
  }
}

/** The file as text for a model: its header line, then (text, PDF) its content within `maxChars`. */
export async function fileAsText(
  file: { name: string; mediaType: string; size: number },
  bytes: Uint8Array | undefined,
  maxChars: number,
): Promise<string> {
  const label = `${ATTACHMENT_HEADER} "${file.name}" — ${file.mediaType}, ${formatBytes(file.size)}`
  if (!bytes) return `${label}: no longer available]`
  if (isImage(file.mediaType)) return `${label}: an image this model cannot see; it was not sent]`
  let content = ''
  let facts = ''
  if (file.mediaType === TEXT_TYPE) content = new TextDecoder().decode(bytes)
  else if (file.mediaType === PDF_TYPE) {
    const pdf = await pdfFacts(bytes)
    if (!pdf) return `${label}: a PDF whose text could not be read]`
    facts = `, ${pdf.pages} page${pdf.pages === 1 ? '' : 's'}`
    content = pdf.text
  }
  const cut = content.length > maxChars
  return `${label}${facts}${cut ? `, first ${maxChars} of ${content.length} characters` : ''}]\n${content.slice(0, maxChars)}`
}
