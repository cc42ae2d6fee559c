'use client'
/**
 * The chat's hook: useSession with the chat fold, plus the actions a person takes.
 * Each action is a push; Stop pushes `cancelled` with the last index this browser has seen and, being
 * optimistic, cuts the local view at once. A Stop is a durable push: kept in the browser's
 * outbox (it survives a reload and its tab) and retried until the server takes it, never rolled back.
 */
import { useCallback, useMemo } from 'react'
import { useSession, clientEventId } from '@/lib/a2/react'
import { httpErrorOf, type A2Event } from '@/lib/a2'
import type { ChatEvent } from './contract'
import { activeAnswer, initialChatState, reduceChat, type ChatState } from './reducer'

const reducer = (state: ChatState, event: A2Event) => reduceChat(state, event as ChatEvent)
/** A Stop is an intent from the press: it must reach the log however long the server is away. */
const DURABLE_TYPES = ['cancelled']

/** The server's fold of the session so far; the tail continues after its lastSeenIndex. */
async function loadSnapshot(sessionId: string): Promise<{ state: ChatState; lastSeenIndex: number }> {
  const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/snapshot`)
  // A non-JSON body (a proxy's error page) throws here and is retried like a network error.
  const body = (await response.json()) as { state: ChatState; lastSeenIndex: number; error?: { code: string; message: string } }
  if (!response.ok) throw httpErrorOf(response, body, 'could not load the session')
  return { state: body.state, lastSeenIndex: body.lastSeenIndex }
}

export function useChat(sessionId: string) {
  const session = useSession<ChatState>(sessionId, {
    reducer,
    initial: initialChatState,
    snapshot: () => loadSnapshot(sessionId),
    durableTypes: DURABLE_TYPES,
  })
  const { push, store, outbox } = session
  const active = activeAnswer(session.state)
  /** Answers whose Stop has not reached the server yet (a send failed): shown as "Stopping". */
  const stopsUndelivered = useMemo(
    () => new Set(outbox.filter((e) => e.event.type === 'cancelled' && e.failures > 0).map((e) => (e.event.payload as { of: string }).of)),
    [outbox],
  )

  /** Sends a message and asks for its answer from `model` (unset: the server's default), in one push (one transaction). */
  const send = useCallback(
    (text: string, options: { edits?: string; after?: string; model?: string } = {}) => {
      const messageId = clientEventId()
      // An edit sits beside the message it edits; a new message follows the answer on screen.
      const payload = options.edits ? { text, edits: options.edits } : options.after ? { text, after: options.after } : { text }
      return push([
        { id: messageId, type: 'message', payload },
        { type: 'generate', payload: withModel({ for: messageId }, options.model) },
      ])
    },
    [push],
  )

  /** Stops the answer being written, cutting at what this browser has seen. */
  const stop = useCallback(() => {
    const answer = activeAnswer(store.getSnapshot().state)
    if (!answer) return Promise.resolve([])
    return push({ type: 'cancelled', payload: { of: answer.id, lastSeenIndex: store.getSnapshot().lastSeenIndex } })
  }, [push, store])

  /** Asks again for the answer to the same message, from `model`: a new version, the old one kept. */
  const regenerate = useCallback(
    (answerId: string, model?: string) => {
      const answer = store.getSnapshot().state.turns.find((t) => t.kind === 'assistant' && t.id === answerId)
      if (!answer || answer.kind !== 'assistant') return Promise.resolve([])
      return push({ type: 'generate', payload: withModel({ for: answer.for, replaces: answer.id }, model) })
    },
    [push, store],
  )

  /** Continue after Stop: a new version that starts with what the stopped answer shows and goes on from there, from `model`. */
  const continueAnswer = useCallback(
    (answerId: string, model?: string) => {
      const answer = store.getSnapshot().state.turns.find((t) => t.kind === 'assistant' && t.id === answerId)
      if (!answer || answer.kind !== 'assistant') return Promise.resolve([])
      return push({ type: 'generate', payload: withModel({ for: answer.for, continues: answer.id }, model) })
    },
    [push, store],
  )

  /** Edit-and-resend: a new version of message `messageId`, and its answer; the old branch is kept. */
  const edit = useCallback((messageId: string, text: string, model?: string) => send(text, { edits: messageId, model }), [send])

  return { ...session, active, stopsUndelivered, send, stop, regenerate, continueAnswer, edit }
}

/** A generate's payload naming `model`, or none (the server's default). */
function withModel<P extends object>(payload: P, model: string | undefined): P & { model?: string } {
  return model === undefined ? payload : { ...payload, model }
}
