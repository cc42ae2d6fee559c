'use client'
/**
 * The chat's hook: useSession with the chat fold, plus the actions a person takes.
 * Each action is a push; Stop pushes `cancelled` with the last index this browser has seen and, being
 * optimistic, cuts the local view at once. A Stop is a durable push: kept in the browser's
 * outbox (it survives a reload and its tab) and retried until the server takes it, never rolled back.
 */
import { useCallback, useMemo, useRef, useState } from 'react'
import { useSession, clientEventId, httpErrorOf } from '@/lib/a2/react'
import type { A2Event } from '@/lib/a2'
import type { ChatEvent, FileRef } from '../contract'
import { activeAnswer, initialChatState, reduceChat, type ChatState } from '../fold/reducer'
import { joinWindow, type FirstScreen, type TurnsWindow } from '../fold/first-screen'
import { answerCancelVersion, waitingCalls } from '../fold/waits'

const reducer = (state: ChatState, event: A2Event) => reduceChat(state, event as ChatEvent)
/** A Stop is an intent from the press: it must reach the log however long the server is away. */
const DURABLE_TYPES = ['cancelled']

/** What the browser knows of the chat's turns it does not hold: the cursor above, and turns with more below. */
export interface History {
  older: string | null
  continues: ReadonlySet<string>
}

async function getJson<T>(url: string, what: string): Promise<T> {
  const response = await fetch(url)
  // A non-JSON body (a proxy's error page) throws here and is retried like a network error.
  const body = (await response.json()) as T & { error?: { code: string; message: string } }
  if (!response.ok) throw httpErrorOf(response, body, what)
  return body
}

const snapshotUrl = (sessionId: string) => `/api/sessions/${encodeURIComponent(sessionId)}/snapshot`

/** The chat's first screen (lib/chat/fold/first-screen.ts): its newest turns, the head the tail continues after, and the cursors. */
async function loadFirstScreen(sessionId: string): Promise<FirstScreen> {
  return getJson(snapshotUrl(sessionId), 'could not load the session')
}

/**
 * `served`: the first screen the page came with (lib/chat/server/page-first-screen.ts), already
 * on screen; without it the browser loads it from the snapshot route before the tail opens.
 */
export function useChat(sessionId: string, served?: FirstScreen) {
  const [history, setHistory] = useState<History>(() => ({ older: served?.older ?? null, continues: new Set(served?.continues) }))
  const session = useSession<ChatState>(sessionId, {
    reducer,
    initial: served?.state ?? initialChatState,
    after: served?.lastSeenIndex,
    snapshot: served
      ? undefined
      : async () => {
          const screen = await loadFirstScreen(sessionId)
          setHistory({ older: screen.older, continues: new Set(screen.continues) })
          return screen
        },
    durableTypes: DURABLE_TYPES,
  })
  const { push, store, outbox } = session
  /** Pages on their way, by what they were asked for: a page is asked for once at a time. */
  const asking = useRef(new Set<string>())

  /**
   * One page of older turns (above the top the browser holds), or of the turns under an older
   * version (`below` its id), joined into the state; resolves when it is in (or already was).
   */
  const loadPage = useCallback(
    async (where: 'above' | 'below', id: string) => {
      const key = `${where}:${id}`
      if (asking.current.has(key)) return
      asking.current.add(key)
      try {
        const page = await getJson<TurnsWindow>(`${snapshotUrl(sessionId)}?${where}=${encodeURIComponent(id)}`, 'could not load earlier messages')
        store.amend((state) => joinWindow(state, page, where))
        setHistory((h) => ({
          older: where === 'above' && h.older === id ? page.older : h.older,
          continues: new Set([...h.continues, ...page.continues].filter((c) => !(where === 'below' && c === id))),
        }))
      } finally {
        asking.current.delete(key)
      }
    },
    [sessionId, store],
  )
  const loadOlder = useCallback(() => (history.older === null ? Promise.resolve() : loadPage('above', history.older)), [history.older, loadPage])
  const loadBelow = useCallback((id: string) => loadPage('below', id), [loadPage])
  const active = activeAnswer(session.state)
  /** Answers whose Stop has not reached the server yet (a send failed): shown as "Stopping". */
  const stopsUndelivered = useMemo(
    () => new Set(outbox.filter((e) => e.event.type === 'cancelled' && e.failures > 0).map((e) => (e.event.payload as { of: string }).of)),
    [outbox],
  )

  /** Sends a message and asks for its answer from `model` (unset: the server's default), in one push (one transaction). */
  const send = useCallback(
    (text: string, options: { edits?: string; after?: string; model?: string; files?: FileRef[] } = {}) => {
      const messageId = clientEventId()
      // An edit sits beside the message it edits; a new message follows the answer on screen.
      const placed = options.edits ? { text, edits: options.edits } : options.after ? { text, after: options.after } : { text }
      // Files by reference; an edit that names none keeps the edited message's (the fold).
      const payload = options.files?.length ? { ...placed, files: options.files } : placed
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

  /** The user's yes or no to a call that waits (answer/approvals.ts), bound to its arguments and the answer's Stops as this page has them. */
  const decide = useCallback(
    (call: string, decision: 'approve' | 'deny') => {
      for (const turn of store.getSnapshot().state.turns) {
        if (turn.kind !== 'assistant') continue
        const part = waitingCalls(turn).find((p) => p.call === call && !p.decided)
        if (part?.approval)
          return push({
            type: 'tool.decision',
            payload: { of: turn.id, call, decision, args: part.approval.args, cancelVersion: answerCancelVersion(turn) },
          })
      }
      return Promise.resolve([])
    },
    [push, store],
  )

  /** Edit-and-resend: a new version of message `messageId`, and its answer; the old branch is kept. */
  const edit = useCallback((messageId: string, text: string, model?: string) => send(text, { edits: messageId, model }), [send])

  return { ...session, active, stopsUndelivered, send, stop, regenerate, continueAnswer, edit, decide, history, loadOlder, loadBelow }
}

/** A generate's payload naming `model`, or none (the server's default). */
function withModel<P extends object>(payload: P, model: string | undefined): P & { model?: string } {
  return model === undefined ? payload : { ...payload, model }
}
