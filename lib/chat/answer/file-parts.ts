/**
 * A message's files as the model gets them. history.ts puts a placeholder file part per file
 * (`a2-file:<id>`, sync and cheap); before the call, `withFileContents` reads each file and
 * gives the model what it takes: the bytes as an AI SDK file part for a model whose
 * configuration lists the kind (`files: ["image", "pdf"]`), else its text (a text file, a PDF's
 * extracted text) within the context budget, or one line saying an image was not sent.
 */
import type { FilePart, ModelMessage, TextPart } from 'ai'
import type { FileRef } from '../contract'
import type { UserTurn } from '../fold/reducer'
import { fileAsText } from '@/lib/files/extract'
import { isImage, PDF_TYPE } from '@/lib/files/sniff'
import type { Files } from '@/lib/files'

const PLACEHOLDER = 'a2-file:'

export type FileKind = 'image' | 'pdf'

/** A user turn as a model message: its text, and a placeholder per file. */
export function userMessage(turn: UserTurn): ModelMessage {
  if (!turn.files?.length) return { role: 'user', content: turn.text }
  return {
    role: 'user',
    content: [
      // A message of files only has no text part (a provider may refuse an empty one).
      ...(turn.text ? [{ type: 'text' as const, text: turn.text }] : []),
      ...turn.files.map((file): FilePart => ({
        type: 'file',
        data: new URL(`${PLACEHOLDER}${file.id}`),
        mediaType: file.mediaType,
        filename: file.name,
      })),
    ],
  }
}

export interface FileSource {
  /** The file and its bytes (undefined when it is gone: a deleted chat's, or never stored). */
  read(id: string): Promise<{ file: FileRef; bytes: Uint8Array } | undefined>
}

/** A file source over the app's files (lib/files). */
export function fileSourceOf(files: Files): FileSource {
  return {
    async read(id) {
      const [file] = await files.byIds([id])
      const bytes = file && (await files.bytesOf(file))
      return file && bytes ? { file, bytes } : undefined
    },
  }
}

const kindOf = (mediaType: string): FileKind | undefined => (isImage(mediaType) ? 'image' : mediaType === PDF_TYPE ? 'pdf' : undefined)

/**
 * Replaces every placeholder with what the model takes. `budgetChars` is shared by the text of
 * all files in the prompt (extracted text past it is cut, and the header says so).
 */
export async function withFileContents(
  messages: ModelMessage[],
  takes: readonly FileKind[],
  source: FileSource,
  budgetChars: number,
): Promise<ModelMessage[]> {
  const placeholders = messages.flatMap((m) => (m.role === 'user' && Array.isArray(m.content) ? m.content.filter(isPlaceholder) : []))
  if (placeholders.length === 0) return messages
  const perFile = Math.max(200, Math.floor(budgetChars / placeholders.length))
  return Promise.all(
    messages.map(async (message): Promise<ModelMessage> => {
      if (message.role !== 'user' || !Array.isArray(message.content)) return message
      const content = await Promise.all(
        message.content.map(async (part): Promise<TextPart | FilePart> => {
          if (!isPlaceholder(part)) return part as TextPart | FilePart
          const id = String(part.data).slice(PLACEHOLDER.length)
          const found = await source.read(id)
          const kind = found && kindOf(found.file.mediaType)
          if (found && kind && takes.includes(kind))
            return { type: 'file', data: found.bytes, mediaType: found.file.mediaType, filename: found.file.name }
          const described = found?.file ?? { name: part.filename ?? id, mediaType: part.mediaType, size: 0 }
          return { type: 'text', text: await fileAsText(described, found?.bytes, perFile) }
        }),
      )
      return { ...message, content }
    }),
  )
}

function isPlaceholder(part: unknown): part is FilePart {
  const p = part as FilePart
  return p.type === 'file' && p.data instanceof URL && p.data.protocol === PLACEHOLDER
}
