import { describe, expect, it } from 'vitest'
import type { AnswerTurn, Turn, UserTurn } from '@/lib/chat/fold/turns'
import type { ModelInfo } from '@/lib/ai/model-list'
import { unseenImages } from './unseen-images'

const file = (name: string, mediaType: string) => ({ id: name, name, mediaType, size: 1, sha256: '0'.repeat(64) })
const message = (id: string, files: UserTurn['files']) => ({ kind: 'user', id, text: '', files }) as UserTurn
const answer = (id: string, of: string, model?: string) => ({ kind: 'assistant', id, for: of, model }) as AnswerTurn
const models: ModelInfo[] = [
  { id: 'text-only', label: 'Text only', reasoning: false, tools: false },
  { id: 'vision', label: 'Vision', reasoning: false, tools: false, files: ['image'] },
]

describe('the images an answer’s model could not see', () => {
  it('names the images (not the PDFs) of the message answered, for a model that takes no images, the default included', () => {
    const turns: Turn[] = [
      message('m1', [file('cat.png', 'image/png'), file('doc.pdf', 'application/pdf'), file('dog.webp', 'image/webp')]),
      answer('a1', 'm1'), // the default: the list's first, text only
      answer('a2', 'm1', 'vision'),
      answer('a3', 'm1', 'gone'), // no longer offered: unknown, nothing said
      message('m2', [file('notes.txt', 'text/plain')]),
      answer('a4', 'm2', 'text-only'),
    ]
    expect(unseenImages(turns, models)).toEqual(new Map([['a1', ['cat.png', 'dog.webp']]]))
  })
})
