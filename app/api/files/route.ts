/**
 * Uploads one file: the raw bytes as the body (`Content-Type: application/octet-stream`, which
 * needs a preflight from another origin, like JSON), its name percent-encoded in `X-File-Name`.
 * The body is read as it streams (hashed, and with an S3 back end stored, as it arrives) and
 * refused past A2_MAX_FILE_BYTES; the type is sniffed from the bytes. 201 with the file's reference (what a message names); a typed 413, 415 or 422 with
 * nothing stored otherwise. The file is the uploader's (the account, on every device) and
 * unbound until a message names it: an upload no message names is swept (docs/attachments.md).
 */
import { getFiles, FileRefused } from '@/lib/files'
import { fileNameFromHeader } from '@/lib/files/names'
import { declaredBytes, readUploadBody } from '@/lib/files/upload-body'
import { route } from '@/lib/http/route'
import { take } from '@/lib/http/limits'
import { env } from '@/lib/env'

export const dynamic = 'force-dynamic'

export async function POST(request: Request) {
  return route(
    request,
    async ({ userId, account }) => {
      try {
        const name = fileNameFromHeader(request.headers.get('x-file-name'))
        await take('pushesByUser', userId)
        const files = await getFiles()
        const maxBytes = files.limits.maxFileBytes
        const file = await files.receive(userId, name, (write) => readUploadBody(request, maxBytes, env().A2_BODY_TIMEOUT_MS, write), {
          guest: !account,
          declaredBytes: declaredBytes(request, maxBytes),
        })
        return Response.json({ file }, { status: 201 })
      } catch (error) {
        if (error instanceof FileRefused) return error.toResponse()
        throw error
      }
    },
    // Like creating a chat: a browser whose first request this is gets its identity here (the
    // page waits for its first list's identity before uploading, so this is the rare case).
    { identity: 'create', body: 'application/octet-stream' },
  )
}
