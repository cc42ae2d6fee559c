/**
 * An upload's body, read as it streams and cut off at the cap: a body past `maxBytes` is
 * refused as soon as it passes it (a Content-Length that says so, at once), so a huge upload
 * costs the server at most `maxBytes` of memory. A body cut off by the client throws: nothing
 * has been stored yet at that point.
 */
import { FileRefused } from './refused'

export async function readUploadBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (Number.isFinite(declared) && declared > maxBytes) throw new FileRefused('file_too_large', `a file may have at most ${maxBytes} bytes`)
  if (!request.body) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let next: ReadableStreamReadResult<Uint8Array>
    try {
      next = await reader.read()
    } catch {
      // The client went away mid-body (a cancel, a closed tab): nothing was stored, and nothing will be.
      throw new FileRefused('truncated_file', 'the upload was cut off before its end')
    }
    const { done, value } = next
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => {})
      throw new FileRefused('file_too_large', `a file may have at most ${maxBytes} bytes`)
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  return bytes
}
