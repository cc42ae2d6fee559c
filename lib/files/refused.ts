/**
 * Why an upload (or a message's files) was refused: a typed 4xx whose body has the shape every
 * API error has (`{ error: { code, message } }`). Thrown before anything is stored.
 */
export const FILE_REFUSALS = {
  /** One file past A2_MAX_FILE_BYTES, or a message's files past A2_MAX_MESSAGE_FILE_BYTES. */
  file_too_large: 413,
  /** The account's files would pass A2_FILE_QUOTA_BYTES_PER_USER. */
  quota_exceeded: 413,
  /** The bytes are none of the kinds taken (PNG, JPEG, WebP, GIF, PDF, UTF-8 text), whatever the name or header says. */
  unsupported_file_type: 415,
  empty_file: 422,
  /** The bytes start like an image or a PDF and stop before its end: cut off, or damaged. */
  truncated_file: 422,
  /** A name with a path in it, a control or bidi-override character, a lone surrogate, or none at all. */
  invalid_file_name: 422,
  /** A message names a file that is not the pusher's, not as uploaded, or another chat's. */
  invalid_file_reference: 422,
  /** A message names more than A2_MAX_FILES_PER_MESSAGE files. */
  too_many_files: 422,
  /** The body stopped arriving: nothing for A2_BODY_TIMEOUT_MS, or slower than a poor mobile link over the whole file (upload-body.ts). */
  upload_timeout: 408,
} as const

export type FileRefusalCode = keyof typeof FILE_REFUSALS

export class FileRefused extends Error {
  constructor(
    readonly code: FileRefusalCode,
    message: string,
  ) {
    super(message)
    this.name = 'FileRefused'
  }

  get status(): number {
    return FILE_REFUSALS[this.code]
  }

  toResponse(): Response {
    return Response.json({ error: { code: this.code, message: this.message } }, { status: this.status })
  }
}
