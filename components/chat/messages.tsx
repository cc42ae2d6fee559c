'use client'
import { memo, useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react'
import type { UserTurn } from '@/lib/chat/fold/reducer'
import type { VisibleTurn } from '@/lib/chat/fold/versions'
import { MAX_MESSAGE_CHARS } from '@/lib/chat/contract'
import { ArrowDownIcon, PencilIcon } from '../icons'
import { Answer } from './answer'
import { CopyButton } from './copy-button'
import { MessageFiles } from './attachments'
import { VersionSwitcher } from './version-switcher'

interface MessagesProps {
  /** The branch on screen, each turn with its versions. */
  turns: VisibleTurn[]
  /** An answer is being written (waiting or streaming). */
  busy: boolean
  /** Answers whose Stop is still on its way to the server. */
  stopsUndelivered: ReadonlySet<string>
  /** Bumped when this browser sends: scrolls to the bottom and follows again. */
  followKey: number
  onRegenerate: (answerId: string) => void
  /** Continue after Stop (unset: no Continue, as on a shared link's view). */
  onContinue?: (answerId: string) => void
  onEdit: (messageId: string, text: string) => void
  /** Shows version `id` of `slot` (which then had `count` versions). */
  onSelectVersion: (slot: string, id: string, count: number) => void
  /** Shown when there are no turns. */
  empty?: React.ReactNode
  /** A shared link's view: no edit, no regenerate. */
  readOnly?: boolean
  /** The server holds older turns than `turns` starts with (the chat opened at its first screen). */
  hasOlder?: boolean
  /** Brings the next page of older turns into `turns`. */
  onLoadOlder?: () => Promise<void>
  /** A turn to bring into view (a search result's): earlier turns are shown down to it, then it is scrolled to. */
  revealTurn?: string
}

/** How close to the bottom (px) still counts as "at the bottom". */
const STICK_THRESHOLD = 64
/**
 * Turns rendered when a chat opens: the latest 60 (30 exchanges), whatever its length. A chat
 * of 4,500 answers (9,000 turns, 99k events) rendered whole took 21–30 s to show its newest
 * answer in Chromium, and re-rendered every turn's element at each chunk.
 */
const FIRST_TURNS = 60
/** Turns each "Show earlier messages" adds above. */
const MORE_TURNS = 60

/**
 * The conversation. Follows the bottom while an answer streams, unless the person scrolled
 * up to read; a "jump to latest" button brings them back.
 */
export function Messages({
  turns,
  busy,
  stopsUndelivered,
  followKey,
  onRegenerate,
  onContinue,
  onEdit,
  onSelectVersion,
  empty,
  readOnly = false,
  hasOlder = false,
  onLoadOlder,
  revealTurn,
}: MessagesProps) {
  const scrollRef = useRef<HTMLDivElement>(null)
  const contentRef = useRef<HTMLDivElement>(null)
  const stick = useRef(true)
  const [atBottom, setAtBottom] = useState(true)
  // The earliest turn on screen once the reader asked for earlier ones, by slot (a slot keeps
  // its place when its version is switched); until then, the latest FIRST_TURNS.
  const [fromSlot, setFromSlot] = useState<string | null>(null)
  // Distance from the content's end to the scroll position, kept across "Show earlier" so the
  // turns being read stay where they were while the earlier ones appear above.
  const keepFromEnd = useRef<number | null>(null)
  const pinned = fromSlot === null ? -1 : turns.findIndex((t) => t.slot === fromSlot)
  const start = pinned >= 0 ? pinned : Math.max(0, turns.length - FIRST_TURNS)
  const shown = start === 0 ? turns : turns.slice(start)

  // Asked for earlier turns that the server still had to send: shown once they are in.
  const [loadingEarlier, setLoadingEarlier] = useState(false)
  const [loadFailed, setLoadFailed] = useState(false)
  const revealEarlier = useCallback(() => {
    const el = scrollRef.current
    keepFromEnd.current = el ? el.scrollHeight - el.scrollTop : null
    setFromSlot(turns[Math.max(0, start - MORE_TURNS)].slot)
  }, [turns, start])
  const showEarlier = () => {
    if (start >= MORE_TURNS || !hasOlder || !onLoadOlder) return revealEarlier()
    setLoadingEarlier(true)
    setLoadFailed(false)
    onLoadOlder().catch(() => {
      setLoadFailed(true)
      setLoadingEarlier(false)
    })
  }
  useEffect(() => {
    if (!loadingEarlier || (start < MORE_TURNS && hasOlder)) return
    setLoadingEarlier(false)
    revealEarlier()
  }, [loadingEarlier, start, hasOlder, revealEarlier])

  // A turn to reveal: older pages come in until it is among the turns, then everything from it down shows and it scrolls into view.
  const revealed = useRef<string | undefined>(undefined)
  const revealAt = revealTurn === undefined ? -1 : turns.findIndex((t) => t.turn.id === revealTurn)
  useEffect(() => {
    if (revealTurn === undefined || revealed.current === revealTurn) return
    if (revealAt === -1) {
      if (hasOlder && onLoadOlder) onLoadOlder().catch(() => setLoadFailed(true))
      return
    }
    revealed.current = revealTurn
    stick.current = false
    setAtBottom(false)
    setFromSlot((slot) => (slot !== null && turns.findIndex((t) => t.slot === slot) <= revealAt ? slot : turns[revealAt].slot))
  }, [revealTurn, revealAt, hasOlder, onLoadOlder, turns])
  useLayoutEffect(() => {
    if (revealed.current === undefined || revealed.current !== revealTurn) return
    const el = scrollRef.current?.querySelector(`[data-turn-id="${CSS.escape(revealTurn)}"]`)
    if (el) el.scrollIntoView({ block: 'center' })
  }, [fromSlot, revealTurn])

  useLayoutEffect(() => {
    const el = scrollRef.current
    if (keepFromEnd.current === null || !el) return
    el.scrollTop = el.scrollHeight - keepFromEnd.current
    keepFromEnd.current = null
  }, [fromSlot])

  // The scroll position at the last scroll event, or where the page last put it: moving up from
  // it is the reader leaving.
  const lastTop = useRef(0)
  const scrollToBottom = useCallback(() => {
    const el = scrollRef.current
    if (!el) return
    el.scrollTop = el.scrollHeight
    // Scroll events come once a frame: this move down and a reader's wheel up in the same frame
    // reach updateAtBottom as one event, which must measure the reader's move from here.
    lastTop.current = el.scrollTop
  }, [])

  // Content grows (chunks, Markdown re-layout, images): follow if stuck to the bottom.
  useEffect(() => {
    const content = contentRef.current
    if (!content) return
    // Not following: the reader's place holds and "jump to latest" shows; content growing
    // under them follows again only from the very bottom (nothing to scroll yet, say).
    const observer = new ResizeObserver(() => {
      const el = scrollRef.current
      if (!stick.current && el) stick.current = el.scrollHeight - el.scrollTop - el.clientHeight <= 1
      if (stick.current) scrollToBottom()
      setAtBottom(stick.current)
    })
    observer.observe(content)
    return () => observer.disconnect()
  }, [scrollToBottom])

  useLayoutEffect(() => {
    if (stick.current) scrollToBottom()
  }, [turns, scrollToBottom])

  useLayoutEffect(() => {
    if (followKey === 0) return
    stick.current = true
    setAtBottom(true)
    scrollToBottom()
  }, [followKey, scrollToBottom])

  function updateAtBottom() {
    const el = scrollRef.current
    if (!el) return
    const fromBottom = el.scrollHeight - el.scrollTop - el.clientHeight
    const moved = el.scrollTop - lastTop.current
    lastTop.current = el.scrollTop
    // Up, even within the threshold, stops following: a trackpad scrolls 5-10 px per event
    // and chunks land every ~35 ms, so re-following within 64 px pulled the reader back down
    // before they could leave (e2e/scroll.spec.ts). Content shrinking clamps scrollTop down
    // too, but then it is at the very bottom (<= 1 px), which still follows. Only a move down
    // follows again: not moving (the page's own scroll to the bottom, a wheel step it overrode)
    // leaves what the wheel decided.
    if (moved < 0 && fromBottom > 1) stick.current = false
    else if (moved > 0 && fromBottom <= STICK_THRESHOLD) stick.current = true
    setAtBottom(stick.current)
  }

  let lastAnswerIndex = -1
  for (let i = shown.length - 1; i >= 0; i--) {
    if (shown[i].turn.kind === 'assistant') {
      lastAnswerIndex = i
      break
    }
  }

  return (
    <div className="relative flex min-h-0 flex-1 flex-col">
      <div
        ref={scrollRef}
        onScroll={updateAtBottom}
        onWheel={(e) => {
          // Scrolling up, even a little, means "let me read": stop following at once.
          if (e.deltaY < 0) stick.current = false
        }}
        onTouchMove={() => {
          stick.current = false
        }}
        // A gutter on both edges keeps the column centred (under the composer) with or without a scrollbar.
        className="min-h-0 flex-1 overflow-y-auto [scrollbar-gutter:stable_both-edges]"
      >
        <div ref={contentRef} className="mx-auto w-full max-w-3xl px-4 pt-6 pb-10 sm:px-6">
          {turns.length === 0 ? (
            empty
          ) : (
            <>
              {(start > 0 || hasOlder) && (
                <div className="mb-8 flex justify-center">
                  <button
                    type="button"
                    data-testid="show-earlier"
                    onClick={showEarlier}
                    disabled={loadingEarlier}
                    aria-busy={loadingEarlier}
                    className="rounded-full border border-neutral-200 px-3 py-1 text-xs font-medium text-neutral-600 hover:bg-neutral-50 dark:border-neutral-700 dark:text-neutral-300 dark:hover:bg-neutral-800"
                  >
                    {loadFailed
                      ? 'Couldn’t load earlier messages: try again'
                      : start > 0
                        ? `Show ${Math.min(MORE_TURNS, start)} earlier messages`
                        : 'Show earlier messages'}
                    {start > 0 && <span className="sr-only"> ({start} not shown)</span>}
                  </button>
                </div>
              )}
              <ol className="space-y-8" aria-label="Conversation">
                {shown.map(({ turn, slot, versions, version }, i) => {
                  const switcher = (
                    <VersionSwitcher
                      version={version}
                      count={versions.length}
                      what={turn.kind === 'user' ? 'message' : 'answer'}
                      onSelect={(v) => onSelectVersion(slot, versions[v], versions.length)}
                    />
                  )
                  return (
                    // Keyed by slot: switching versions keeps the turn's element, and with it
                    // the focus on its ‹ › buttons.
                    <li key={slot} data-turn-id={turn.id}>
                      {turn.kind === 'user' ? (
                        <UserMessage turn={turn} canEdit={!busy && !readOnly} onEdit={onEdit} versions={switcher} readOnly={readOnly} />
                      ) : (
                        <Answer
                          answer={turn}
                          isLast={i === lastAnswerIndex}
                          busy={busy || readOnly}
                          stopUndelivered={stopsUndelivered.has(turn.id)}
                          onRegenerate={onRegenerate}
                          onContinue={readOnly ? undefined : onContinue}
                          versions={switcher}
                        />
                      )}
                    </li>
                  )
                })}
              </ol>
            </>
          )}
        </div>
      </div>

      {!atBottom && turns.length > 0 && (
        <button
          type="button"
          onClick={() => {
            stick.current = true
            setAtBottom(true)
            scrollToBottom()
          }}
          aria-label="Jump to latest message"
          className="absolute bottom-3 left-1/2 inline-flex size-9 -translate-x-1/2 items-center justify-center rounded-full border border-neutral-200 bg-white text-neutral-700 shadow-md hover:bg-neutral-50 dark:border-neutral-700 dark:bg-neutral-800 dark:text-neutral-200 dark:hover:bg-neutral-700"
        >
          <ArrowDownIcon className="size-4" />
        </button>
      )}
    </div>
  )
}

const UserMessage = memo(function UserMessage({
  turn,
  canEdit,
  onEdit,
  versions,
  readOnly = false,
}: {
  turn: UserTurn
  canEdit: boolean
  /** No edit at all (a shared link's view), not only not now. */
  readOnly?: boolean
  onEdit: (messageId: string, text: string) => void
  /** The ‹ 1/2 › switcher (renders nothing for one version). */
  versions: React.ReactNode
}) {
  const [editing, setEditing] = useState(false)
  const [draft, setDraft] = useState(turn.text)
  const textareaRef = useRef<HTMLTextAreaElement>(null)
  const editButtonRef = useRef<HTMLButtonElement>(null)

  useLayoutEffect(() => {
    const el = textareaRef.current
    if (!editing || !el) return
    el.style.height = 'auto'
    el.style.height = `${Math.min(el.scrollHeight, 320)}px`
  }, [editing, draft])

  useEffect(() => {
    if (!editing) return
    const el = textareaRef.current
    el?.focus()
    el?.setSelectionRange(el.value.length, el.value.length)
  }, [editing])

  const trimmed = draft.trim()
  const tooLong = draft.length > MAX_MESSAGE_CHARS
  const canSave = canEdit && trimmed.length > 0 && !tooLong && trimmed !== turn.text.trim()

  const cancel = () => {
    setEditing(false)
    setDraft(turn.text)
    requestAnimationFrame(() => editButtonRef.current?.focus())
  }
  const save = () => {
    if (!canSave) return
    setEditing(false)
    onEdit(turn.id, draft)
  }

  if (editing) {
    return (
      // One element with the message's below (React keeps it as the one switches to the other), so
      // focus put on it as an edit is sent stays there: focusable from script only.
      <article
        data-testid="message-user"
        data-message-id={turn.id}
        aria-label="You (editing)"
        tabIndex={-1}
        className="flex justify-end outline-none"
      >
        <form
          className="w-full max-w-[85%] rounded-3xl border border-neutral-300 bg-neutral-50 p-3 dark:border-neutral-700 dark:bg-neutral-800/70"
          onSubmit={(e) => {
            e.preventDefault()
            save()
          }}
        >
          <label htmlFor={`edit-${turn.id}`} className="sr-only">
            Edit your message
          </label>
          <textarea
            id={`edit-${turn.id}`}
            ref={textareaRef}
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Escape') {
                e.preventDefault()
                cancel()
              } else if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
                e.preventDefault()
                save()
              }
            }}
            rows={1}
            className="block w-full resize-none bg-transparent px-1 text-[15px] leading-6 outline-none"
          />
          <div className="mt-2 flex items-center justify-end gap-2">
            {tooLong && (
              <span className="mr-auto text-xs text-red-600 dark:text-red-400">
                {draft.length.toLocaleString()} / {MAX_MESSAGE_CHARS.toLocaleString()}
              </span>
            )}
            <button
              type="button"
              onClick={cancel}
              className="rounded-full px-3.5 py-1.5 text-sm font-medium text-neutral-700 hover:bg-neutral-200 dark:text-neutral-200 dark:hover:bg-neutral-700"
            >
              Cancel
            </button>
            <button
              type="submit"
              disabled={!canSave}
              className="rounded-full bg-neutral-900 px-3.5 py-1.5 text-sm font-medium text-white hover:bg-neutral-700 disabled:opacity-40 dark:bg-white dark:text-neutral-900 dark:hover:bg-neutral-200"
            >
              Send
            </button>
          </div>
        </form>
      </article>
    )
  }

  // The text first, then its actions and versions: the reading order a screen reader follows.
  return (
    <article
      data-testid="message-user"
      data-message-id={turn.id}
      aria-label="You"
      tabIndex={-1}
      className="group/user relative flex flex-col items-end gap-1 rounded-lg outline-none focus-visible:outline-2 focus-visible:outline-offset-4 focus-visible:outline-neutral-400"
    >
      <div
        data-testid="message-text"
        className="max-w-[85%] rounded-3xl bg-neutral-100 px-4 py-2.5 text-[15px] leading-6 break-words whitespace-pre-wrap dark:bg-neutral-800"
      >
        {turn.text}
      </div>
      {turn.files && turn.files.length > 0 && <MessageFiles files={turn.files} />}
      {/* On wide screens the row shows on hover, over the space below, so hidden it takes no
          room; with versions to switch it stays in the flow. Phones always show it. */}
      <div className="flex items-center gap-0.5 md:absolute md:top-full md:right-0 md:mt-0.5 md:has-[[data-testid=version-switcher]]:static md:has-[[data-testid=version-switcher]]:mt-0">
        <div className="flex shrink-0 items-center gap-0.5 opacity-0 transition-opacity group-hover/user:opacity-100 focus-within:opacity-100 max-md:opacity-100">
          <CopyButton text={turn.text} label="Copy message" />
          {!readOnly && (
            <button
              ref={editButtonRef}
              type="button"
              data-testid="edit-button"
              onClick={() => {
                setDraft(turn.text)
                setEditing(true)
              }}
              disabled={!canEdit}
              aria-label="Edit message"
              title={canEdit ? 'Edit' : 'Wait for the answer to finish (or stop it) to edit'}
              className="inline-flex size-8 items-center justify-center rounded-lg text-neutral-500 hover:bg-neutral-100 hover:text-neutral-900 disabled:cursor-not-allowed disabled:opacity-40 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
            >
              <PencilIcon className="size-4" />
            </button>
          )}
        </div>
        {versions}
      </div>
    </article>
  )
})
