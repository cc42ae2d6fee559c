/**
 * A file's name as the browser gives it is only ever a label: it is checked here, never used in a
 * path (bytes are keyed by the file's random id) and never put in a header as is (dispositionOf).
 * A name that could mislead (a path, an RTL override making `exe.png` of `gnp.exe`, a control
 * character, a lone surrogate) is refused, not repaired: the person renames the file.
 */
import { FileRefused } from './refused'

export const MAX_NAME_CHARS = 255

/** C0 and C1 controls (NUL included), and the bidi embedding, override and isolate marks. */
// eslint-disable-next-line no-control-regex -- the point is to find them
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** The name sent in the `X-File-Name` header, percent-encoded (encodeURIComponent) so any Unicode name survives HTTP. */
export function fileNameFromHeader(raw: string | null): string {
  if (raw === null || raw === '') throw new FileRefused('invalid_file_name', 'the file has no name (X-File-Name)')
  let name: string
  try {
    // A lone surrogate cannot be percent-encoded as UTF-8: its bytes make this throw.
    name = decodeURIComponent(raw)
  } catch {
    throw new FileRefused('invalid_file_name', 'the file name is not valid percent-encoded UTF-8')
  }
  return checkFileName(name)
}

export function checkFileName(name: string): string {
  const normalized = name.normalize('NFC')
  if (LONE_SURROGATE.test(normalized)) throw new FileRefused('invalid_file_name', 'the file name has a lone surrogate')
  if (normalized.trim() === '' || normalized.length > MAX_NAME_CHARS) {
    throw new FileRefused('invalid_file_name', `a file name is 1 to ${MAX_NAME_CHARS} characters`)
  }
  if (FORBIDDEN.test(normalized)) throw new FileRefused('invalid_file_name', 'the file name has a control or text-direction character')
  if (/[/\\]/.test(normalized) || normalized === '.' || normalized === '..') {
    throw new FileRefused('invalid_file_name', 'a file name is a name, not a path')
  }
  return normalized
}

/**
 * `Content-Disposition` for a stored name: an ASCII fallback with everything but letters, digits,
 * `.`, `-`, `_` and spaces replaced, and the exact name in RFC 5987's `filename*`.
 */
export function dispositionOf(name: string, kind: 'inline' | 'attachment'): string {
  const fallback = name.replace(/[^A-Za-z0-9._ -]/g, '_').slice(0, 100) || 'file'
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${exact}`
}
