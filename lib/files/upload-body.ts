/**
 * An upload's body, read as it streams and cut off at the cap: a body past `maxBytes` is
 * refused as soon as it passes it (a Content-Length that says so, at once), so a huge upload
 * costs the server at most `maxBytes` of memory. A body cut off by the client throws, and the
 * upload drops whatever of it the back end had begun to store (files.ts).
 *
 * A body that stops arriving is a 408 (`upload_timeout`): after `idleMs` without a byte, or past
 * a deadline of `idleMs` plus its size at MIN_BYTES_PER_S, so a slow drip holds a connection for
 * minutes at most, never for good.
 */
import { FileRefused } from './refused'

/** 32 KiB/s (256 kbit/s, a poor mobile link): a 10 MB file has 5 minutes. */
const MIN_BYTES_PER_S = 32 * 1024

/** The body's length as its Content-Length declares it (undefined without one), refused at once past `maxBytes`. */
export function declaredBytes(request: Request, maxBytes: number): number | undefined {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (!Number.isFinite(declared)) return undefined
  if (declared > maxBytes) throw new FileRefused('file_too_large', `a file may have at most ${maxBytes} bytes`)
  return declared
}

/**
 * The whole body; each chunk is also handed to `onChunk` as it arrives (the upload hashes it and
 * starts storing it then). A body that ends short of its Content-Length was cut off.
 */
export async function readUploadBody(
  request: Request,
  maxBytes: number,
  idleMs: number,
  onChunk: (chunk: Uint8Array) => void = () => {},
): Promise<Uint8Array> {
  const declared = declaredBytes(request, maxBytes)
  if (!request.body) return new Uint8Array(0)
  const cap = declared ?? maxBytes
  const deadline = Date.now() + idleMs + (cap / MIN_BYTES_PER_S) * 1000
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    for (;;) {
      const { done, value } = await readWithin(reader, Math.min(idleMs, deadline - Date.now()))
      if (done) break
      total += value.byteLength
      if (total > cap) throw new FileRefused('file_too_large', `a file may have at most ${cap} bytes (its Content-Length, or the cap)`)
      chunks.push(value)
      onChunk(value)
    }
    if (declared !== undefined && total < declared) throw new FileRefused('truncated_file', 'the upload ended before its Content-Length')
  } catch (error) {
    await reader.cancel().catch(() => {})
    throw error
  }
  const bytes = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  return bytes
}

/** The next chunk, or a 408 if none comes within `ms`; a body the client cut off is a truncated file. */
async function readWithin(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number): Promise<ReadableStreamReadResult<Uint8Array>> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FileRefused('upload_timeout', 'the upload stopped arriving')), Math.max(0, ms))
  })
  try {
    return await Promise.race([
      reader.read().catch(() => {
        // The client went away mid-body (a cancel, a closed tab): nothing was stored, and nothing will be.
        throw new FileRefused('truncated_file', 'the upload was cut off before its end')
      }),
      timedOut,
    ])
  } finally {
    clearTimeout(timer)
  }
}
