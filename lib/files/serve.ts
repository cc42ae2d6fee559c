/**
 * A file as the app serves it, after the route's own check (owner, or a live share of its chat).
 * Never trusted to the browser's judgement: `nosniff`, a CSP that allows nothing to run, and
 * only raster images inline. A PDF or text file (an SVG or HTML one included: to us they are
 * text) is always a download, so nothing active ever renders on the app's origin.
 */
import { isImage, TEXT_TYPE } from './sniff'
import { dispositionOf } from './names'
import type { StoredFile } from './files'

export const FILE_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"

export function fileResponse(file: StoredFile, bytes: Uint8Array, options: { download?: boolean } = {}): Response {
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
