/**
 * A file as the app serves it, after the route's own check (owner, or a live share of its chat).
 * Never trusted to the browser's judgement: `nosniff`, a CSP that allows nothing to run, and
 * only raster images inline. A PDF or text file (an SVG or HTML one included: to us they are
 * text) is always a download, so nothing active ever renders on the app's origin.
 */
import { isImage, TEXT_TYPE } from './sniff'
import { dispositionOf } from './names'
import { A2Error } from '@/lib/a2'
import type { Files, StoredFile } from './files'

export const FILE_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"

/**
 * What a file route answers, once it has found `file` for its reader: `?thumb=1` an image's
 * thumbnail (a file without one, itself), `?download=1` the file as a download, else the file.
 */
export async function serveFile(request: Request, file: StoredFile | undefined, files: Files): Promise<Response> {
  const asked = new URL(request.url).searchParams
  const thumb = file && asked.has('thumb') ? await files.thumbOf(file) : undefined
  if (file && thumb) return fileResponse({ ...file, mediaType: THUMB_TYPE, sha256: `${file.sha256}-thumb` }, thumb)
  const bytes = file && (await files.bytesOf(file))
  if (!file || !bytes) throw new A2Error('not_found', 'no such file')
  return fileResponse(file, bytes, { download: asked.has('download') })
}

const THUMB_TYPE = 'image/webp'

function fileResponse(file: StoredFile, bytes: Uint8Array, options: { download?: boolean } = {}): Response {
  // A thumbnail is WebP: an image too.
  const inline = isImage(file.mediaType) && !options.download
  const body = new Uint8Array(bytes) // its own ArrayBuffer: a Response body, whichever driver read it
  return new Response(body, {
    headers: {
      'content-type': file.mediaType === TEXT_TYPE ? 'text/plain; charset=utf-8' : file.mediaType,
      'content-length': String(bytes.byteLength),
      'content-disposition': dispositionOf(file.name, inline ? 'inline' : 'attachment'),
      'x-content-type-options': 'nosniff',
      'content-security-policy': FILE_CSP,
      'cross-origin-resource-policy': 'same-origin',
      etag: `"${file.sha256}"`,
    },
  })
}
