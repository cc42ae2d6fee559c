/**
 * A chat as a file: the conversation on screen (each slot's newest version, as a fresh open
 * shows it), with every version of each turn kept, and each answer as its owner saw it: a
 * stopped answer cut at its Stop, with what was written after a late Stop left out; its
 * reasoning cut the same way, and each tool call with its input, its state in the words the page
 * uses (tools/tool-call.ts) and its result. Pure: the fold's state in, text out.
 */
import type { FileRef } from '../contract'
import { answerText, isTerminal, type AnswerPart, type AnswerTurn, type ChatState, type Turn } from '../fold/reducer'
import { partText, toolPhase } from '../fold/parts'
import { describeToolCall } from '../tools/tool-call'
import { visibleTurns } from '../fold/versions'

export type ExportedPart =
  | { kind: 'reasoning'; text: string }
  | {
      kind: 'tool'
      call: string
      tool: string
      /** The parsed input of a complete call. */
      input?: unknown
      /** The input as it streamed, for a call the model never completed (or the reader's cut left incomplete). */
      inputText?: string
      /** From the call's effect record, or how far the model got with it ('input', 'called'). */
      state: ReturnType<typeof toolPhase>
      /** What the page shows for it, and its detail. */
      shows: string
      detail?: string
      result?: unknown
      error?: string
      settle?: 'reconcile' | 'operator'
    }

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
  /** Answers with reasoning or tool calls: in log order, as the reader saw them. */
  parts?: ExportedPart[]
  /** Messages with files: each by reference (its bytes are the owner's to download: `/api/files/<id>`). */
  files?: FileRef[]
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
  if (turn.kind === 'user') return { id: turn.id, text: turn.text, ...(turn.files?.length && { files: turn.files }) }
  return {
    id: turn.id,
    text: answerText(turn),
    status: turn.status,
    finishReason: turn.finishReason,
    ...(turn.lastSeenIndex !== undefined && { stoppedAfterIndex: turn.lastSeenIndex }),
    ...(turn.usage && { usage: turn.usage }),
    ...(turn.error && { error: turn.error }),
    ...(turn.parts.length > 0 && { parts: turn.parts.map((part) => exportedPart(part, isTerminal(turn.status))) }),
  }
}

function exportedPart(part: AnswerPart, ended: boolean): ExportedPart {
  if (part.kind === 'reasoning') return { kind: 'reasoning', text: partText(part) }
  const { label, detail } = describeToolCall(part, ended)
  return {
    kind: 'tool',
    call: part.call,
    tool: part.tool,
    ...(part.input !== undefined ? { input: part.input } : { inputText: partText(part) }),
    state: toolPhase(part),
    shows: label,
    ...(detail !== undefined && { detail }),
    ...(part.state === 'done' && part.result !== undefined && { result: part.result }),
    ...(part.error !== undefined && { error: part.error }),
    ...(part.settle !== undefined && { settle: part.settle }),
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
      out.push(`## ${who}${label}${note}`, '')
      for (const part of v.parts ?? []) out.push(...partMarkdown(part), '')
      out.push(v.text || (v.error ? `_${v.error}_` : v.parts ? '_(no text)_' : '_(empty)_'), '')
      if (v.files?.length)
        out.push(...v.files.map((f) => `- Attached: \`${f.name.replace(/`/g, "'")}\` (${f.mediaType}, ${f.size} bytes, sha256 ${f.sha256})`), '')
    })
  }
  return out.join('\n')
}

/** Reasoning as a quote; a tool call as a line with its state, then its input and result in code blocks. */
function partMarkdown(part: ExportedPart): string[] {
  if (part.kind === 'reasoning') return ['> **Reasoning**', '>', ...part.text.split('\n').map((line) => (line ? `> ${line}` : '>'))]
  const lines = [`**Tool call \`${part.tool}\`: ${part.shows}**${part.detail ? ` — ${part.detail}` : ''}`, '']
  if (part.input !== undefined) lines.push('Input:', '', fenced(JSON.stringify(part.input, null, 2), 'json'))
  else if (part.inputText) lines.push('Input (as streamed):', '', fenced(part.inputText, ''))
  if (part.result !== undefined) lines.push('', 'Result:', '', fenced(JSON.stringify(part.result, null, 2), 'json'))
  return lines
}

/** A code block whose fence no backtick run inside it can close. */
function fenced(text: string, lang: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length))
  const fence = '`'.repeat(longest + 1)
  return `${fence}${lang}\n${text}\n${fence}`
}
