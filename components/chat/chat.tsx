'use client'
import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react'
import dynamic from 'next/dynamic'
import { useChat } from '@/lib/chat/browser/use-chat'
import { ApprovalProvider } from './approval'
import { RenderedAnswersContext, type RenderedAnswers } from './answer-markdown'
import { titleFrom } from '@/lib/chat/server/title'
import { visibleTurns, type Selection } from '@/lib/chat/fold/versions'
import type { ChatState } from '@/lib/chat/fold/reducer'
import type { FirstScreen } from '@/lib/chat/fold/first-screen'
import type { PushError } from '@/lib/a2/react'
import { ErrorAlert } from './error-alert'
import { takeFirstFiles } from './attachments'
import type { FileRef } from '@/lib/chat/contract'
import { meansNoSuchChat, chatListStore, sessionTitle, takeFirstMessage, useChatList } from '../chat-list-store'
import { Composer, type ComposerHandle } from './composer'
import { Messages } from './messages'
import { OfflineNotice } from './offline-notice'
import { focusAnswer, focusMessage, touchPrimary } from './touch'
import { chosenModel, useModels } from '../models'

const NONE_RENDERED: RenderedAnswers = {}

/** "This chat isn't available": loaded only when a chat is not there (it asks better-auth's client, ~50 KB, whether to offer signing in). */
const NotFoundView = dynamic(() => import('../not-found').then((m) => m.NotFoundView))

/**
 * One chat session. Mount with `key={sessionId}`: the session store lives as long as the component.
 * `firstScreen`: the chat as the page's server read it for its owner, rendered in the page's HTML.
 */
export function Chat({
  sessionId,
  revealTurn,
  firstScreen,
  renderedAnswers = NONE_RENDERED,
}: {
  sessionId: string
  revealTurn?: string
  firstScreen?: FirstScreen
  /** The first screen's finished answers, their Markdown rendered by the page's server. */
  renderedAnswers?: RenderedAnswers
}) {
  const {
    state,
    active,
    stopsUndelivered,
    connection,
    error,
    loaded,
    send,
    stop,
    regenerate,
    continueAnswer,
    edit,
    push,
    store,
    events,
    history,
    loadOlder,
    loadBelow,
    decide,
  } = useChat(sessionId, firstScreen)
  // The picker's model answers what this page asks next: read at each ask, so the "/" page's pick reaches the first message.
  const { models } = useModels()
  const { sessions, missing } = useChatList()
  const [followKey, setFollowKey] = useState(0)
  const composerRef = useRef<ComposerHandle>(null)
  const follow = useCallback(() => setFollowKey((k) => k + 1), [])
  const { visible, onSelectVersion } = useVersions(state, history.continues, loadBelow)
  const activeId = active?.id
  // A message follows the answer on screen, whichever version that is.
  const lastVisibleAnswer = useRef<string | undefined>(undefined)
  lastVisibleAnswer.current = visible.findLast((v) => v.turn.kind === 'assistant')?.turn.id

  // The first message of a new chat, handed over by the "/" page: sent once, here.
  useEffect(() => {
    const text = takeFirstMessage(sessionId)
    if (text === undefined) return
    follow()
    void send(text, { model: chosenModel(models), files: takeFirstFiles(sessionId) })
      .then(() => chatListStore.changed()) // titled from it: the other tabs' lists too
      .catch(() => {}) // a failure shows in the error alert, with Retry
  }, [sessionId, send, follow, models])

  useListRefreshes(events, state, activeId)

  // A message that was not sent is rolled back out of the conversation: it goes back into the
  // box at once (unless something else is typed there), so what was typed stays in sight.
  useEffect(() => {
    const text = error && unsentText(error)
    if (text) composerRef.current?.restore(text)
  }, [error])

  useEscapeStops(activeId, stop)
  const { onSend, onStop, onRegenerate, onContinue, onEdit } = useTurnActions({
    sessionId,
    chat: { send, stop, regenerate, continueAnswer, edit, store },
    models,
    follow,
    activeId,
    composerRef,
    lastVisibleAnswer,
  })

  const title = sessionTitle(sessions.find((s) => s.id === sessionId))
  // The snapshot (the server's fold so far) arrives before the tail opens.
  const loadingHistory = !loaded
  // 401: a browser with no identity yet (a link opened cold) owns no chat either; 400: an id that cannot exist.
  // Once loaded, a 404 answers a push to a chat deleted since (from another tab): it is gone,
  // and "no such session" with a Retry that cannot work would say neither.
  // Deleted for good in another tab of this browser (sessions-channel.ts): gone here too.
  const gone = (!loaded && meansNoSuchChat(error)) || error?.status === 404 || missing.includes(sessionId)
  const page = gone ? (
    <NotFoundView kind="chat" sessionId={sessionId} replacesChat={loaded} />
  ) : (
    <div className="flex min-h-0 flex-1 flex-col">
      <h1 className="sr-only">{title}</h1>
      <RenderedAnswersContext value={renderedAnswers}>
        <ApprovalProvider decide={decide}>
          <Messages
            turns={visible}
            busy={active !== undefined}
            stopsUndelivered={stopsUndelivered}
            followKey={followKey}
            onRegenerate={onRegenerate}
            onContinue={onContinue}
            onEdit={onEdit}
            onSelectVersion={onSelectVersion}
            hasOlder={history.older !== null}
            onLoadOlder={loadOlder}
            revealTurn={loaded ? revealTurn : undefined}
            empty={loadingHistory ? <HistorySkeleton /> : <EmptyChat />}
          />
        </ApprovalProvider>
      </RenderedAnswersContext>

      <ChatFooter
        sessionId={sessionId}
        connection={connection}
        error={error}
        onRetry={(failed) => {
          // Retry sends the message itself: the copy in the box goes, unless it was edited.
          const text = unsentText(failed)
          if (text) composerRef.current?.clearIf(text)
          void push(failed.inputs).catch(() => {})
        }}
        onDismiss={() => store.clearError()}
        composerRef={composerRef}
        onSend={onSend}
        onStop={onStop}
        active={active !== undefined}
      />
    </div>
  )
  return (
    <>
      <ShowWhenHydrated />
      {page}
    </>
  )
}

/**
 * Which version of each message and answer is on screen: the newest unless the reader chose. An
 * older version chosen whose next turns the browser does not hold yet brings them, a page at a time.
 */
function useVersions(state: ChatState, continues: ReadonlySet<string>, loadBelow: (turnId: string) => Promise<void>) {
  const [selection, setSelection] = useState<Selection>({})
  const visible = useMemo(() => visibleTurns(state, selection), [state, selection])
  const onSelectVersion = useCallback((slot: string, id: string, count: number) => setSelection((s) => ({ ...s, [slot]: { id, of: count } })), [])
  const visibleEnd = visible.at(-1)?.turn.id
  useEffect(() => {
    if (visibleEnd !== undefined && continues.has(visibleEnd)) void loadBelow(visibleEnd).catch(() => {})
  }, [visibleEnd, continues, loadBelow])
  return { visible, onSelectVersion }
}

/** The chat list follows this chat: re-read as a message is confirmed and as each answer ends. */
function useListRefreshes(events: readonly { type: string }[], state: ChatState, activeId: string | undefined): void {
  // A message was confirmed: the server titles the session from its first one, and the
  // session moves to the top of the list.
  const confirmedMessages = events.reduce((n, e) => (e.type === 'message' ? n + 1 : n), 0)
  useEffect(() => {
    if (confirmedMessages > 0) void chatListStore.refresh()
  }, [confirmedMessages])

  // An answer ended: the session's title and place in the list may have changed.
  const previousActive = useRef(activeId)
  useEffect(() => {
    if (previousActive.current && !activeId) void chatListStore.refresh()
    previousActive.current = activeId
  }, [activeId])
  // A Stop shows at once, but the server settles the run a moment later, when its terminal
  // event is written: the list read at the Stop still said "generating", for a poll (3 s)
  // more. Each run's end folded in from the log re-reads it, the server settled by then.
  const endedAnswers = state.turns.reduce((n, t) => (t.kind === 'assistant' && (t.finishReason || t.error) ? n + 1 : n), 0)
  const previousEnded = useRef(endedAnswers)
  useEffect(() => {
    if (endedAnswers > previousEnded.current) void chatListStore.refresh()
    previousEnded.current = endedAnswers
  }, [endedAnswers])
}

const noSubscription = () => () => {}

/**
 * A page held out of sight for a Stop this browser has not delivered (hold-if-pending.tsx) shows
 * once hydrated: React hydrates the server's markup, then renders the store as this browser has
 * it (its outbox applied) in the same pass that turns `hydrated` true; the effect runs after it.
 * A component of its own, so that pass re-renders it alone, not the whole chat: a chat's
 * re-render right after hydration was a task the phone could not split (figure 13).
 */
function ShowWhenHydrated(): null {
  const hydrated = useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  )
  useEffect(() => {
    if (hydrated) document.documentElement.removeAttribute('data-held')
  }, [hydrated])
  return null
}

/** Escape stops the answer being written, from anywhere on the page. */
function useEscapeStops(activeId: string | undefined, stop: () => Promise<unknown>): void {
  useEffect(() => {
    if (!activeId) return
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented) return
      e.preventDefault()
      void stop().catch(() => {})
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [activeId, stop])
}

/**
 * What the page's buttons do: send, Stop, Regenerate, Continue and Edit, each asking the model
 * picked at that moment, following the bottom, and putting focus where the next action is.
 */
function useTurnActions({
  sessionId,
  chat: { send, stop, regenerate, continueAnswer, edit, store },
  models,
  follow,
  activeId,
  composerRef,
  lastVisibleAnswer,
}: {
  sessionId: string
  chat: Pick<ReturnType<typeof useChat>, 'send' | 'stop' | 'regenerate' | 'continueAnswer' | 'edit' | 'store'>
  models: ReturnType<typeof useModels>['models']
  follow: () => void
  activeId: string | undefined
  composerRef: React.RefObject<ComposerHandle | null>
  lastVisibleAnswer: React.RefObject<string | undefined>
}) {
  const onSend = useCallback(
    (text: string, files: FileRef[] = []) => {
      follow()
      void send(text, { after: lastVisibleAnswer.current, model: chosenModel(models), files })
        .then(() => chatListStore.changed()) // generating, and first in the list: in the other tabs too
        .catch(() => {})
    },
    [send, follow, models, lastVisibleAnswer],
  )
  // Stop's and Regenerate's buttons go away as they act: focus goes to the composer, where Esc
  // stops an answer and typing goes on, instead of to <body>. On a touch screen focusing the
  // composer opens the on-screen keyboard over the answer just asked for (or just stopped):
  // focus goes to that answer instead, which a screen reader then reads.
  const focusAfterAction = useCallback(
    (answerId: string | undefined) => {
      if (touchPrimary()) focusAnswer(answerId)
      else composerRef.current?.focus()
    },
    [composerRef],
  )
  const onStop = useCallback(() => {
    void stop().catch(() => {})
    focusAfterAction(activeId)
  }, [stop, activeId, focusAfterAction])
  const onRegenerate = useCallback(
    (answerId: string) => {
      follow()
      void regenerate(answerId, chosenModel(models))
        .then(() => chatListStore.changed())
        .catch(() => {})
      // The new version takes the old one's place (and element): focus on it stays on the slot.
      focusAfterAction(answerId)
    },
    [regenerate, follow, focusAfterAction, models],
  )
  const onContinue = useCallback(
    (answerId: string) => {
      follow()
      void continueAnswer(answerId, chosenModel(models))
        .then(() => chatListStore.changed())
        .catch(() => {})
      focusAfterAction(answerId)
    },
    [continueAnswer, follow, focusAfterAction, models],
  )
  const onEdit = useCallback(
    (messageId: string, text: string) => {
      follow()
      // The edit's field goes away as it is sent; on a touch screen its keyboard goes with it.
      if (touchPrimary()) focusMessage(messageId)
      else composerRef.current?.focus()
      const edited = store.getSnapshot().state.turns.find((t) => t.id === messageId)
      const first = edited?.kind === 'user' && edited.parent === null
      void edit(messageId, text, chosenModel(models))
        // The chat is titled from its first message: a new version of it retitles the chat.
        .then(() => (first ? chatListStore.rename(sessionId, titleFrom(text)) : chatListStore.changed()))
        .catch(() => {})
    },
    [edit, follow, store, sessionId, models, composerRef],
  )

  return { onSend, onStop, onRegenerate, onContinue, onEdit }
}

/** Under the conversation: the offline and reconnecting notices, the error, the composer and its keys. */
function ChatFooter({
  sessionId,
  connection,
  error,
  onRetry,
  onDismiss,
  composerRef,
  onSend,
  onStop,
  active,
}: {
  sessionId: string
  connection: ReturnType<typeof useChat>['connection']
  error: PushError | undefined
  onRetry: (error: PushError) => void
  onDismiss: () => void
  composerRef: React.RefObject<ComposerHandle | null>
  onSend: (text: string, files: FileRef[]) => void
  onStop: () => void
  active: boolean
}) {
  return (
    <div className="relative shrink-0 pb-3 sm:pb-4">
      <div
        aria-hidden="true"
        className="pointer-events-none absolute inset-x-0 -top-6 h-6 bg-linear-to-t from-white to-transparent dark:from-neutral-900"
      />
      {/* The message column's width and padding (messages.tsx), so the composer lines up with it. */}
      <div className="mx-auto w-full max-w-3xl px-4 sm:px-6">
        <OfflineNotice />
        {connection === 'reconnecting' && (
          <div className="mb-2 flex justify-center">
            <p
              data-testid="connection-status"
              role="status"
              className="inline-flex items-center gap-2 rounded-full border border-amber-200 bg-amber-50 px-3 py-1 text-xs font-medium text-amber-800 dark:border-amber-900/60 dark:bg-amber-950/50 dark:text-amber-200"
            >
              <span className="relative flex size-2" aria-hidden="true">
                <span className="absolute inline-flex size-full animate-ping rounded-full bg-amber-400 opacity-75" />
                <span className="relative inline-flex size-2 rounded-full bg-amber-500" />
              </span>
              Reconnecting…
            </p>
          </div>
        )}
        {error && <ErrorAlert error={error} onRetry={() => onRetry(error)} onDismiss={onDismiss} />}
        <Composer ref={composerRef} onSend={onSend} onStop={onStop} active={active} autoFocus="unless-touch" draftKey={sessionId} />
        <p className="mt-2 hidden text-center text-xs text-neutral-500 sm:block dark:text-neutral-400">
          <kbd className="font-sans">Enter</kbd> to send · <kbd className="font-sans">Shift</kbd>+<kbd className="font-sans">Enter</kbd> for a new
          line · <kbd className="font-sans">Esc</kbd> stops the answer
        </p>
      </div>
    </div>
  )
}

/** The text of the message a failed push held, if it held one. */
function unsentText(error: PushError): string | undefined {
  const message = error.inputs.find((i) => i.type === 'message')?.payload as { text?: string } | undefined
  return message?.text || undefined
}

function EmptyChat() {
  return (
    <div className="flex min-h-[40vh] flex-col items-center justify-center text-center">
      <p className="text-lg font-medium text-neutral-800 dark:text-neutral-200">Nothing here yet</p>
      <p className="mt-1 text-sm text-neutral-500 dark:text-neutral-400">Send a message to start the conversation.</p>
    </div>
  )
}

function HistorySkeleton() {
  return (
    <div className="space-y-8" role="status" aria-busy="true" aria-label="Loading the conversation">
      <div className="flex justify-end">
        <div className="h-10 w-2/5 animate-pulse rounded-3xl bg-neutral-100 dark:bg-neutral-800" />
      </div>
      <div className="flex gap-4">
        <div className="size-7 shrink-0 animate-pulse rounded-full bg-neutral-100 dark:bg-neutral-800" />
        <div className="flex-1 space-y-2.5 pt-1">
          <div className="h-3.5 w-11/12 animate-pulse rounded bg-neutral-100 dark:bg-neutral-800" />
          <div className="h-3.5 w-4/5 animate-pulse rounded bg-neutral-100 dark:bg-neutral-800" />
          <div className="h-3.5 w-3/5 animate-pulse rounded bg-neutral-100 dark:bg-neutral-800" />
        </div>
      </div>
    </div>
  )
}
