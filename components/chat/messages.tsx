'use client'
import { memo, useCallback, useMemo, useRef, useState } from 'react'
import type { VisibleTurn } from '@/lib/chat/fold/versions'
import { ArrowDownIcon } from '../icons'
import { Answer } from './answer'
import { UserMessage } from './user-message'
import { VersionSwitcher } from './version-switcher'
import { MORE_TURNS, useEarlierTurns } from './earlier-turns'
import { useFollowBottom } from './follow-bottom'
import { unseenImages } from './unseen-images'
import { useModels } from '../models'

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
  const stick = useRef(true)
  const [atBottom, setAtBottom] = useState(true)
  const { start, shown, filling, loadingEarlier, loadFailed, showEarlier } = useEarlierTurns({
    turns,
    hasOlder,
    onLoadOlder,
    revealTurn,
    scrollRef,
    stick,
    setAtBottom,
  })
  const { contentRef, updateAtBottom, jumpToLatest } = useFollowBottom({ scrollRef, stick, setAtBottom, turns, followKey })
  const lastAnswerIndex = shown.findLastIndex((t) => t.turn.kind === 'assistant')
  const { models } = useModels()
  const unseen = useMemo(
    () =>
      unseenImages(
        turns.map((t) => t.turn),
        models,
      ),
    [turns, models],
  )

  return (
    <div className="relative flex min-h-0 flex-1 flex-col">
      <div
        ref={scrollRef}
        data-conversation-scroller
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
        <div ref={contentRef} data-conversation className="mx-auto w-full max-w-3xl px-4 pt-6 pb-10 sm:px-6">
          {turns.length === 0 ? (
            empty
          ) : (
            <>
              {((start > 0 && !filling) || hasOlder) && (
                <ShowEarlier start={start} loading={loadingEarlier} failed={loadFailed} onClick={showEarlier} />
              )}
              <ol className="space-y-8" aria-label="Conversation">
                {shown.map(({ turn, slot, versions, version }, i) => (
                  // Keyed by slot: switching versions keeps the turn's element, and with it
                  // the focus on its ‹ › buttons.
                  <TurnItem
                    key={slot}
                    turn={turn}
                    slot={slot}
                    versions={versions}
                    version={version}
                    isLast={i === lastAnswerIndex}
                    busy={busy}
                    readOnly={readOnly}
                    stopUndelivered={stopsUndelivered.has(turn.id)}
                    unseenImages={unseen.get(turn.id)?.join(', ')}
                    onRegenerate={onRegenerate}
                    onContinue={onContinue}
                    onEdit={onEdit}
                    onSelectVersion={onSelectVersion}
                  />
                ))}
              </ol>
            </>
          )}
        </div>
      </div>

      {!atBottom && turns.length > 0 && (
        <button
          type="button"
          onClick={jumpToLatest}
          aria-label="Jump to latest message"
          className="absolute bottom-3 left-1/2 inline-flex size-9 -translate-x-1/2 items-center justify-center rounded-full border border-neutral-200 bg-white text-neutral-700 shadow-md hover:bg-neutral-50 dark:border-neutral-700 dark:bg-neutral-800 dark:text-neutral-200 dark:hover:bg-neutral-700"
        >
          <ArrowDownIcon className="size-4" />
        </button>
      )}
    </div>
  )
}

function ShowEarlier({ start, loading, failed, onClick }: { start: number; loading: boolean; failed: boolean; onClick: () => void }) {
  return (
    <div className="mb-8 flex justify-center">
      <button
        type="button"
        data-testid="show-earlier"
        onClick={onClick}
        disabled={loading}
        aria-busy={loading}
        className="rounded-full border border-neutral-200 px-3 py-1 text-xs font-medium text-neutral-600 hover:bg-neutral-50 dark:border-neutral-700 dark:text-neutral-300 dark:hover:bg-neutral-800"
      >
        {failed
          ? 'Couldn’t load earlier messages: try again'
          : start > 0
            ? `Show ${Math.min(MORE_TURNS, start)} earlier messages`
            : 'Show earlier messages'}
        {start > 0 && <span className="sr-only"> ({start} not shown)</span>}
      </button>
    </div>
  )
}

interface TurnItemProps extends Omit<VisibleTurn, 'versions'> {
  /** The slot's versions' ids (a new array at every fold: compared by content). */
  versions: readonly string[]
  isLast: boolean
  busy: boolean
  readOnly: boolean
  stopUndelivered: boolean
  /** The names of the images in the message this answer answers that its model could not see (unseen-images.ts). */
  unseenImages?: string
  onRegenerate: (answerId: string) => void
  onContinue?: (answerId: string) => void
  onEdit: (messageId: string, text: string) => void
  onSelectVersion: (slot: string, id: string, count: number) => void
}

/**
 * One turn of the conversation. Rendered again only when its own props change: a chunk of the
 * answer being written, or a list refresh, re-renders that answer, not the finished turns above it
 * (their Markdown is parsed once).
 */
const TurnItem = memo(function TurnItem({
  turn,
  slot,
  versions,
  version,
  isLast,
  busy,
  readOnly,
  stopUndelivered,
  unseenImages,
  onRegenerate,
  onContinue,
  onEdit,
  onSelectVersion,
}: TurnItemProps) {
  const onSelect = useCallback((v: number) => onSelectVersion(slot, versions[v], versions.length), [onSelectVersion, slot, versions])
  const switcher = (
    <VersionSwitcher version={version} count={versions.length} what={turn.kind === 'user' ? 'message' : 'answer'} onSelect={onSelect} />
  )
  return (
    <li data-turn-id={turn.id}>
      {turn.kind === 'user' ? (
        <UserMessage turn={turn} canEdit={!busy && !readOnly} onEdit={onEdit} versions={switcher} readOnly={readOnly} />
      ) : (
        <Answer
          answer={turn}
          isLast={isLast}
          busy={busy || readOnly}
          stopUndelivered={stopUndelivered}
          unseenImages={unseenImages}
          onRegenerate={onRegenerate}
          onContinue={readOnly ? undefined : onContinue}
          versions={switcher}
        />
      )}
    </li>
  )
}, sameTurnItem)

function sameTurnItem(a: TurnItemProps, b: TurnItemProps): boolean {
  for (const key of Object.keys(a) as (keyof TurnItemProps)[]) {
    if (key === 'versions') continue
    if (!Object.is(a[key], b[key])) return false
  }
  return a.versions.length === b.versions.length && a.versions.every((id, i) => id === b.versions[i])
}
