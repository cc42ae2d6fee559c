/**
 * The images an answer's model could not see: it was told each one's name, not shown it
 * (lib/chat/answer/file-parts.ts), and the page says so in one line under the answer.
 */
import type { ModelInfo } from '@/lib/ai/model-list'
import type { Turn } from '@/lib/chat/fold/turns'

/** By answer id: the names of the images in the message it answers that its model does not take. An answer whose model is no longer offered is left out (unknown). */
export function unseenImages(turns: readonly Turn[], models: readonly ModelInfo[]): Map<string, string[]> {
  const imagesOf = new Map<string, string[]>()
  for (const turn of turns)
    if (turn.kind === 'user' && turn.files?.length)
      imagesOf.set(
        turn.id,
        turn.files.filter((f) => f.mediaType.startsWith('image/')).map((f) => f.name),
      )
  const unseen = new Map<string, string[]>()
  for (const turn of turns) {
    if (turn.kind !== 'assistant') continue
    const images = imagesOf.get(turn.for) ?? []
    const model = turn.model === undefined ? models[0] : models.find((m) => m.id === turn.model)
    if (images.length > 0 && model && !model.files?.includes('image')) unseen.set(turn.id, images)
  }
  return unseen
}
