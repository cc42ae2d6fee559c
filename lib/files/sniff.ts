/**
 * What a file is, from its bytes alone (file-type reads the magic numbers): the name and the
 * request's Content-Type are never asked. Taken: PNG, JPEG, WebP, GIF, PDF, and anything else
 * that is valid UTF-8 text without NUL (code, Markdown, CSV, and also SVG or HTML, which are
 * then only ever text: served as `text/plain` downloads). Everything else is a 415.
 */
import { FileRefused } from './refused'

export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const
export const PDF_TYPE = 'application/pdf'
export const TEXT_TYPE = 'text/plain'
export type FileMediaType = (typeof IMAGE_TYPES)[number] | typeof PDF_TYPE | typeof TEXT_TYPE

export const isImage = (mediaType: string) => (IMAGE_TYPES as readonly string[]).includes(mediaType)

export async function sniffMediaType(bytes: Uint8Array): Promise<FileMediaType> {
  if (bytes.length === 0) throw new FileRefused('empty_file', 'the file is empty')
  // Loaded here, not at import: the routes that serve files never need it.
  const { fileTypeFromBuffer } = await import('file-type')
  const detected = await fileTypeFromBuffer(bytes)
  if (detected) {
    const mime = detected.mime as string
    if (mime === PDF_TYPE || isImage(mime)) {
      if (!isComplete(mime as FileMediaType, bytes))
        throw new FileRefused('truncated_file', `the ${detected.ext.toUpperCase()} file stops before its end`)
      return mime as FileMediaType
    }
    throw new FileRefused(
      'unsupported_file_type',
      `a ${detected.ext} file cannot be attached: images (PNG, JPEG, WebP, GIF), PDFs and text files can`,
    )
  }
  if (isText(bytes)) return TEXT_TYPE
  throw new FileRefused('unsupported_file_type', 'these bytes are no image, PDF or UTF-8 text')
}

function isText(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return false
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    return true
  } catch {
    return false
  }
}

const endsWith = (bytes: Uint8Array, tail: number[]) => tail.every((b, i) => bytes[bytes.length - tail.length + i] === b)
const tailHas = (bytes: Uint8Array, marker: string, within: number) =>
  Buffer.from(bytes.subarray(Math.max(0, bytes.length - within))).includes(marker, 0, 'latin1')

/** Whether the bytes reach their format's end marker: an upload cut off half-way (or a damaged file) does not. */
function isComplete(mediaType: FileMediaType, bytes: Uint8Array): boolean {
  switch (mediaType) {
    case 'image/png': // the IEND chunk and its CRC
      return endsWith(bytes, [0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82])
    case 'image/jpeg': // EOI, allowing the padding some cameras write after it
      return tailHas(bytes, '\xff\xd9', 512)
    case 'image/gif': // the trailer byte
      return tailHas(bytes, ';', 16)
    case 'image/webp': // the RIFF size covers the whole file
      return bytes.length >= 12 && new DataView(bytes.buffer, bytes.byteOffset).getUint32(4, true) + 8 <= bytes.length
    case 'application/pdf':
      return tailHas(bytes, '%%EOF', 1024)
    default:
      return true
  }
}
