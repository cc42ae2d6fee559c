/**
 * Admission of the files a push's messages carry (after admitChatPush): each is the pusher's,
 * exactly as uploaded, and not another chat's; the message's count and bytes are within their
 * limits. Then the files are bound to this chat: from then on they are deleted with it and a
 * live share link of it may read them. Refusals are the API's typed errors (413, 422), before
 * the append, so a refused push writes nothing to the log.
 */
import { A2Error } from '@/lib/a2'
import type { FileRefused, Files } from '@/lib/files'
import type { FileRef } from '../contract'

type Input = { type: string; payload: unknown }

const AS_API_ERROR = {
  file_too_large: 'payload_too_large',
  too_many_files: 'limit_reached',
} as const

export async function admitMessageFiles(files: Files, owner: string, sessionId: string, inputs: readonly Input[]): Promise<void> {
  for (const input of inputs) {
    if (input.type !== 'message') continue
    const refs = (input.payload as { files?: FileRef[] }).files ?? []
    try {
      await files.admitMessageFiles(owner, sessionId, refs)
    } catch (error) {
      if (!(error instanceof Error) || error.name !== 'FileRefused') throw error
      const refused = error as FileRefused
      throw new A2Error(AS_API_ERROR[refused.code as keyof typeof AS_API_ERROR] ?? 'invalid_reference', refused.message)
    }
  }
}
