/**
 * A chat as a file: the conversation on screen (each slot's newest version, as a fresh open
 * shows it), with every version of each turn kept, and each answer as its owner saw it: a
 * stopped answer cut at its Stop, with what was written after a late Stop left out. Pure:
 * the fold's state in, text out.
 */
import { answerText, type AnswerTurn, type ChatState, type Turn } from './reducer'
import { visibleTurns } from './versions'

export interface ExportedVersion {
  id: string
  text: string
  /** Answers only. */
  status?: AnswerTurn['status']
  finishReason?: AnswerTurn['finishReason']
  /** A stopped answer: the last log index its reader had seen when they pressed Stop. */
  stoppedAfterIndex?: number
  usage?: AnswerTurn['usage']
  error?: string
}

export interface ExportedTurn {
  role: 'user' | 'assistant'
  /** Every version of this turn, oldest first. */
  versions: ExportedVersion[]
  /** Which version the conversation goes on from (0-based): the newest. */
  shown: number
}

export interface ExportedChat {
  format: 'a2-chat-export@1'
  session: { id: string; title: string }
  exportedAt: string
  turns: ExportedTurn[]
}

function version(turn: Turn): ExportedVersion {
  if (turn.kind === 'user') return { id: turn.id, text: turn.text }
  return {
    id: turn.id,
    text: answerText(turn),
    status: turn.status,
    finishReason: turn.finishReason,
    ...(turn.lastSeenIndex !== undefined && { stoppedAfterIndex: turn.lastSeenIndex }),
    ...(turn.usage && { usage: turn.usage }),
    ...(turn.error && { error: turn.error }),
  }
}

export function exportChat(session: { id: string; title: string }, state: ChatState, now = new Date()): ExportedChat {
  const byId = new Map(state.turns.map((t) => [t.id, t]))
  return {
    format: 'a2-chat-export@1',
    session,
    exportedAt: now.toISOString(),
    turns: visibleTurns(state).map(({ turn, versions, version: shown }) => ({
      role: turn.kind,
      versions: versions.map((id) => version(byId.get(id)!)),
      shown,
    })),
  }
}

const STATUS_NOTE: Partial<Record<NonNullable<ExportedVersion['status']>, string>> = {
  stopped: 'stopped',
  failed: 'failed',
  streaming: 'still being written',
  waiting: 'not started yet',
}

/** The same as Markdown: a heading per turn, other versions under it, each answer's end said. */
export function exportMarkdown(chat: ExportedChat): string {
  const out = [`# ${chat.session.title || 'Chat'}`, '', `Exported ${chat.exportedAt}.`, '']
  for (const turn of chat.turns) {
    const who = turn.role === 'user' ? 'You' : 'Assistant'
    turn.versions.forEach((v, i) => {
      const label = turn.versions.length > 1 ? ` (version ${i + 1} of ${turn.versions.length}${i === turn.shown ? '' : ', not continued'})` : ''
      const note = v.status && STATUS_NOTE[v.status] ? ` — ${STATUS_NOTE[v.status]}` : ''
      out.push(`## ${who}${label}${note}`, '', v.text || (v.error ? `_${v.error}_` : '_(empty)_'), '')
    })
  }
  return out.join('\n')
}
