/**
 * What a chat push may ask for, beyond its schema: the events it names must exist and be
 * of the right kind, an answer is asked for only when none is running for that message,
 * and a user (and everyone together) has at most so many answers running. Checked before
 * the append, so a refused push writes nothing.
 *
 * The "none running" and concurrency checks read, then the append writes: two pushes racing
 * can both pass. The per-user cap bounds what that costs (a few answers, not a flood).
 */
import { A2Error } from '@/lib/a2'
import type { A2Server, PushFound } from '@/lib/a2/server'
import { env } from '@/lib/env'
import { rateLimited } from '@/lib/http/limits'
import { modelList } from '@/lib/ai/model'
import type { Chat, ChatEvent } from '../contract'
import { chatFold } from '../fold/checkpoint'
import { answerOf, refusalOfDecision } from '../tools/approval-rule'
import { argsHash } from '../tools/approval-args'
import { checkTokenBudget } from './token-budget'

type Input = { id?: string; type: string; payload: unknown }

/** Which types each reference must name: `generate.for` a message, `cancelled.of` an answer (a generate). */
const REFERENCES: Record<string, Array<[field: string, type: string]>> = {
  message: [['edits', 'message']],
  generate: [
    ['for', 'message'],
    ['replaces', 'generate'],
    ['continues', 'generate'],
  ],
  cancelled: [['of', 'generate']],
  'tool.decision': [['of', 'generate']],
}

/** 5 s: roughly how long an answer takes to finish or be stopped, freeing a place. */
const BUSY_RETRY_MS = 5_000

/** The ids a push's events refer to (what `admitChatPush` checks): handed to `push` as `refersTo`. */
export function referencedIds(inputs: readonly Input[]): string[] {
  return inputs.flatMap((input) =>
    (REFERENCES[input.type] ?? []).flatMap(([field]) => {
      const target = (input.payload as Record<string, unknown>)[field]
      return typeof target === 'string' ? [target] : []
    }),
  )
}

/**
 * Admits a push on what one read of the session found (`found`: the events with the pushed and
 * referenced ids, the runs still running); only a push that asks for answers reads more (the
 * concurrency caps and the token budget). A Stop costs no read of its own.
 */
export async function admitChatPush(
  server: A2Server<Chat>,
  owner: string,
  inputs: readonly Input[],
  found: PushFound<Chat>,
  session?: { id: string },
): Promise<void> {
  const inLog = new Map(found.events.map((event) => [event.id, event.type as string]))
  // A retry of a push that landed (every id already in the log) is answered by the append
  // as a duplicate, or refused there if its content differs: nothing new to admit.
  if (inputs.length > 0 && inputs.every((input) => input.id && inLog.has(input.id))) return

  // A run whose Stop is recorded (CANCELLING) no longer counts: Regenerate right after Stop
  // is admitted while the stopped run unwinds (its chunks are refused from the Stop on).
  const running = new Map(
    found.running
      .filter((run) => run.consumer === 'generate' && run.status === 'ACTIVE')
      .map((run) => [run.eventId, (run.payload as { for: string }).for]),
  )
  const known = new Map(inLog)
  const offered = new Set(modelList().map((entry) => entry.id))
  /** Each answer's message, for `continues` (a version of the answer to the same message). */
  const answers = new Map(
    [...found.events, ...inputs].flatMap((event) =>
      event.type === 'generate' && event.id ? [[event.id, (event.payload as { for: string }).for]] : [],
    ),
  )
  let generations = 0
  for (const input of inputs) {
    for (const [field, type] of REFERENCES[input.type] ?? []) {
      const target = (input.payload as Record<string, unknown>)[field]
      if (target === undefined) continue
      if (typeof target !== 'string' || known.get(target) !== type) {
        throw new A2Error('invalid_reference', `${input.type}.${field} must name a ${type === 'generate' ? 'answer' : type} in this chat`)
      }
    }
    if (input.type === 'cancelled') running.delete((input.payload as { of: string }).of)
    if (input.type === 'generate') {
      const { for: message, model, continues } = input.payload as { for: string; model?: string; continues?: string }
      if (model !== undefined && !offered.has(model)) {
        throw new A2Error('invalid_payload', 'generate.model must name one of the models this server offers')
      }
      if (continues !== undefined && answers.get(continues) !== message) {
        throw new A2Error('invalid_reference', 'generate.continues must name an answer to the same message')
      }
      if ([...running.values()].includes(message)) throw new A2Error('conflict', 'an answer to that message is already running: stop it first')
      running.set(input.id ?? `pending-${generations}`, message)
      generations++
    }
    if (input.id) known.set(input.id, input.type)
  }
  if (generations > 0) {
    await checkConcurrency(server, owner, generations)
    await checkTokenBudget(server.store.db, owner)
  }
  const decisions = inputs.filter((input) => input.type === 'tool.decision')
  if (decisions.length > 0) await admitDecisions(server, owner, session, decisions)
}

/**
 * A decision on a waiting call (answer/approvals.ts) is admitted only for the call as the log
 * has it now: waiting and undecided, its arguments' hash, the answer not stopped (its
 * `cancelVersion`), not expired, and never from a browser as `expired` (tools/approval-rule.ts).
 * One fold of the session: a decision is rare, and the fold starts from its newest checkpoint.
 * A Stop or another decision landing between this read and the append is settled by the rule
 * the runs apply (the first in log order counts), so the race writes an event that does nothing.
 */
async function admitDecisions(
  server: A2Server<Chat>,
  owner: string,
  session: { id: string } | undefined,
  decisions: readonly Input[],
): Promise<void> {
  if (!session) throw new A2Error('invalid_payload', 'a tool decision is pushed through the chat’s route')
  const { state } = await server.fold(session.id, owner, chatFold)
  const decided = new Set<string>()
  for (const input of decisions) {
    const decision = input.payload as Extract<ChatEvent, { type: 'tool.decision' }>['payload']
    const refusal = decided.has(`${decision.of}\u0000${decision.call}`)
      ? { code: 'conflict' as const, message: 'that call is decided twice in one push' }
      : refusalOfDecision(answerOf(state, decision.of), decision, { argsHash, now: Date.now() })
    if (refusal) throw new A2Error(refusal.code, refusal.message)
    decided.add(`${decision.of}\u0000${decision.call}`)
  }
}

/** At most A2_MAX_RUNNING_GENERATIONS_PER_USER answers of one user, and A2_MAX_RUNNING_GENERATIONS of everyone, run at once. */
async function checkConcurrency(server: A2Server<Chat>, owner: string, adding: number): Promise<void> {
  const { A2_MAX_RUNNING_GENERATIONS_PER_USER: perUser, A2_MAX_RUNNING_GENERATIONS: total } = env()
  const mine = await server.runs.countOpen({ consumer: 'generate', owner })
  if (mine + adding > perUser) throw rateLimited(`you have ${mine} answers running (the limit is ${perUser})`, BUSY_RETRY_MS)
  const everyone = await server.runs.countOpen({ consumer: 'generate' })
  if (everyone + adding > total) throw rateLimited('the server is answering as many questions as it can', BUSY_RETRY_MS)
}
