'use client'
import { memo, useEffect, useState } from 'react'
import { answerRest, answerText, isTerminal, type AnswerTurn } from '@/lib/chat/fold/reducer'
import { AlertIcon, ArrowRightIcon, BookmarkIcon, RefreshIcon, SparkleIcon, StopCircleIcon } from '../icons'
import { useModels } from '../models'
import { AnswerMarkdown } from './answer-markdown'
import { CopyButton } from './copy-button'
import { FinishedBeforeStop } from './finished-before-stop'
import { AnswerParts } from './answer-parts'

interface AnswerProps {
  answer: AnswerTurn
  /** The conversation's last answer: the one regenerate applies to. */
  isLast: boolean
  /** Another answer is being written: regenerate/retry wait. */
  busy: boolean
  /** This answer's Stop has not reached the server yet (it is kept and retried). */
  stopUndelivered?: boolean
  onRegenerate: (answerId: string) => void
  /** Continue after Stop: offered on the last answer once it is stopped with text (unset: never). */
  onContinue?: (answerId: string) => void
  /** The ‹ 1/2 › switcher (renders nothing for one version). */
  versions?: React.ReactNode
  /** The names of images in the message that the answer's model could not see (it was told of them only). */
  unseenImages?: string
}

/** One assistant answer: Markdown while it streams and after, with its end state and actions. */
export const Answer = memo(function Answer({
  answer,
  isLast,
  busy,
  stopUndelivered = false,
  onRegenerate,
  onContinue,
  versions,
  unseenImages,
}: AnswerProps) {
  // Offered, not shown: what was written after the reader's Stop, when it landed after the end.
  const [showingRest, setShowingRest] = useState(false)
  const text = answerText(answer) + (showingRest ? answerRest(answer) : '')
  const { status } = answer
  const stalled = useStalled(answer)
  const streaming = status === 'streaming'
  const waiting = status === 'waiting'
  const terminal = isTerminal(status)
  const canRegenerate = isLast && !busy && (status === 'done' || status === 'stopped')
  // Once the run has ended (its `finished` folded in, ms after the Stop): until then the server holds it open and would refuse a new answer to the message (409).
  const canContinue = onContinue !== undefined && isLast && !busy && status === 'stopped' && text !== '' && answer.finishReason !== undefined
  const actionProps = { answer, text, terminal, canRegenerate, canContinue, onRegenerate, onContinue }
  return (
    <article
      data-testid="message-assistant"
      data-status={status}
      data-answer-id={answer.id}
      // Set once the run's terminal event is folded in: after it the log holds nothing more
      // of this answer, so tests wait on it instead of waiting a while for stragglers.
      data-ended={answer.finishReason ?? (answer.error ? 'error' : undefined)}
      aria-label="Assistant"
      // Focusable from script only: where focus goes after Stop or Regenerate on a touch screen.
      tabIndex={-1}
      className="group/answer flex gap-3 rounded-lg outline-none focus-visible:outline-2 focus-visible:outline-offset-4 focus-visible:outline-neutral-400 sm:gap-4"
    >
      <div
        aria-hidden="true"
        className="mt-0.5 flex size-7 shrink-0 items-center justify-center rounded-full border max-sm:hidden border-neutral-200 bg-white text-neutral-700 dark:border-neutral-700 dark:bg-neutral-900 dark:text-neutral-300"
      >
        <SparkleIcon className="size-4" />
      </div>

      <div className="relative min-w-0 flex-1 pt-0.5">
        {unseenImages && <UnseenImages names={unseenImages} model={answer.model} />}
        {/* Reasoning and tool calls, outside the live region: a screen reader is not read every thought. */}
        <AnswerParts parts={answer.parts} ended={terminal} />
        {/* One live region for the text and how it ended, so "Stopped" is announced too. */}
        <div aria-live="polite" aria-busy={streaming || waiting}>
          <div data-testid="answer-text">
            {text ? (
              <AnswerMarkdown id={answer.id} text={text} streaming={streaming} />
            ) : streaming ? (
              <span className="streaming-caret" aria-hidden="true" />
            ) : null}
          </div>

          {status === 'stopped' && (
            <p
              data-testid="stopped-marker"
              data-delivered={!stopUndelivered}
              className="mt-3 inline-flex items-center gap-1.5 rounded-full border border-neutral-200 bg-neutral-50 px-2.5 py-1 text-xs font-medium text-neutral-600 dark:border-neutral-700 dark:bg-neutral-800/60 dark:text-neutral-300"
            >
              <StopCircleIcon className="size-3.5" />
              {stopUndelivered
                ? 'Stopping — will apply when reconnected'
                : text || answer.parts.length > 0
                  ? 'Stopped'
                  : 'Stopped before the answer began'}
            </p>
          )}
          {answer.finishedBeforeStop && answerRest(answer) !== '' && (
            <FinishedBeforeStop showingRest={showingRest} onToggle={() => setShowingRest((shown) => !shown)} />
          )}
        </div>

        {waiting && <TypingIndicator />}

        {streaming && stalled && (
          <p data-testid="answer-reconnecting" role="status" className="mt-2 text-xs text-neutral-500 dark:text-neutral-400">
            Reconnecting…
          </p>
        )}

        {status === 'failed' && <AnswerFailed answer={answer} isLast={isLast} busy={busy} onRegenerate={onRegenerate} />}
        {status === 'done' && <DoneNotice finishReason={answer.finishReason} />}
        {answer.notes.length > 0 && <SavedNotes notes={answer.notes} />}

        {/* Versions stay in the flow. The last answer's actions too; an earlier answer's show on
            hover or focus over the space between turns, so hidden they take no room. */}
        <div className="mt-2 -ml-1.5 flex min-h-0 items-center gap-0.5 empty:hidden">
          {versions}
          {isLast && <AnswerActions className="" {...actionProps} />}
        </div>
        {!isLast && (
          <AnswerActions
            className="absolute top-full left-0 -ml-1.5 mt-0.5 opacity-0 group-hover/answer:opacity-100 focus-within:opacity-100"
            {...actionProps}
          />
        )}
      </div>
    </article>
  )
})

/** What the answer's actions need: copy, regenerate, continue, its model and tokens. */
interface ActionProps {
  answer: AnswerTurn
  text: string
  terminal: boolean
  canRegenerate: boolean
  canContinue: boolean
  onRegenerate: (answerId: string) => void
  onContinue?: (answerId: string) => void
}

/** Copy, Regenerate, Continue, the model's name and the tokens, once the answer ended. */
function AnswerActions({
  className,
  answer,
  text,
  terminal,
  canRegenerate,
  canContinue,
  onRegenerate,
  onContinue,
}: ActionProps & { className: string }) {
  const modelLabel = useModels().labelOf(answer.model)
  if (!(terminal && (text || canRegenerate))) return null
  return (
    <div className={`flex items-center gap-0.5 transition-opacity ${className}`}>
      {text && <CopyButton text={text} label="Copy answer" />}
      {canRegenerate && (
        <button
          type="button"
          data-testid="regenerate-button"
          onClick={() => onRegenerate(answer.id)}
          aria-label="Regenerate answer"
          title="Regenerate"
          className="inline-flex size-8 items-center justify-center rounded-lg text-neutral-500 hover:bg-neutral-100 hover:text-neutral-900 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
        >
          <RefreshIcon className="size-4" />
        </button>
      )}
      {canContinue && (
        <button
          type="button"
          data-testid="continue-button"
          onClick={() => onContinue?.(answer.id)}
          aria-label="Continue the answer from where it stopped"
          title="Continue"
          className="inline-flex h-8 items-center gap-1 rounded-lg px-2 text-xs font-medium text-neutral-500 hover:bg-neutral-100 hover:text-neutral-900 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
        >
          <ArrowRightIcon className="size-3.5" />
          Continue
        </button>
      )}
      {modelLabel && (
        <span data-testid="answer-model" title="The model that wrote this answer" className="ml-1.5 text-xs text-neutral-500 dark:text-neutral-400">
          {modelLabel}
        </span>
      )}
      {answer.usage?.outputTokens !== undefined && (
        <span
          data-testid="answer-tokens"
          title={answer.usage.counted ? 'Counted by the app: the model reported none for a stopped answer' : 'As the model reported them'}
          className="ml-1.5 text-xs text-neutral-500 opacity-0 transition-opacity group-hover/answer:opacity-100 dark:text-neutral-400"
        >
          {answer.usage.outputTokens} tokens{answer.usage.counted ? ' (counted)' : ''}
        </span>
      )}
    </div>
  )
}

/** The answer could not be completed: the error, and Retry on the last answer. */
function AnswerFailed({
  answer,
  isLast,
  busy,
  onRegenerate,
}: {
  answer: AnswerTurn
  isLast: boolean
  busy: boolean
  onRegenerate: (answerId: string) => void
}) {
  return (
    <div className="mt-3 flex flex-wrap items-start gap-3 rounded-xl border border-red-200 bg-red-50 px-3.5 py-3 text-sm text-red-800 dark:border-red-900/60 dark:bg-red-950/40 dark:text-red-200">
      <AlertIcon className="mt-0.5 size-4 shrink-0" />
      <div className="min-w-0 flex-1">
        <p className="font-medium">The answer couldn’t be completed.</p>
        {answer.error && <p className="mt-0.5 break-words text-red-700/90 dark:text-red-300/90">{answer.error}</p>}
      </div>
      {isLast && (
        <button
          type="button"
          data-testid="retry-button"
          onClick={() => onRegenerate(answer.id)}
          disabled={busy}
          className="inline-flex items-center gap-1.5 rounded-lg border border-red-300 bg-white px-2.5 py-1 text-sm font-medium text-red-800 hover:bg-red-100 disabled:opacity-50 dark:border-red-800 dark:bg-red-950 dark:text-red-100 dark:hover:bg-red-900/60"
        >
          <RefreshIcon className="size-3.5" />
          Retry
        </button>
      )}
    </div>
  )
}

/** Why a finished answer ended, when it was not the model's own end. */
function DoneNotice({ finishReason }: { finishReason?: AnswerTurn['finishReason'] }) {
  return (
    <>
      {finishReason === 'length' && <p className="mt-3 text-xs text-neutral-500 dark:text-neutral-400">The answer reached the length limit.</p>}
      {finishReason === 'session_full' && (
        <p data-testid="session-full" className="mt-3 text-xs text-neutral-500 dark:text-neutral-400">
          This chat is full: the answer ends here. Start a new chat to go on.
        </p>
      )}
      {finishReason === 'content-filter' && (
        <p className="mt-3 text-xs text-neutral-500 dark:text-neutral-400">The answer was cut by the content filter.</p>
      )}
    </>
  )
}

function SavedNotes({ notes }: { notes: readonly string[] }) {
  return (
    <ul className="mt-3 flex flex-wrap gap-2" aria-label="Notes saved by the assistant">
      {notes.map((note, i) => (
        <li
          key={i}
          title={note}
          className="inline-flex max-w-full items-center gap-1.5 rounded-full border border-amber-200 bg-amber-50 px-2.5 py-1 text-xs text-amber-900 dark:border-amber-900/60 dark:bg-amber-950/40 dark:text-amber-200"
        >
          <BookmarkIcon className="size-3.5 shrink-0" />
          <span className="truncate">
            <span className="font-medium">Saved note:</span> {note}
          </span>
        </li>
      ))}
    </ul>
  )
}

/**
 * 5 s with no new chunk while streaming: the attempt writing it has most likely died (a
 * model between tokens pauses well under a second) and a successor will take over, after
 * the generate lease (15 s) at most. Its first chunk clears this, as it continues the text.
 */
const STALL_MS = 5_000

function useStalled(answer: AnswerTurn): boolean {
  const streaming = answer.status === 'streaming'
  // The latest step of any kind: a model that reasons or streams a tool's input is not stalled.
  const lastChunk = Math.max(
    answer.chunks.at(-1)?.index ?? -1,
    ...answer.parts.map((p) =>
      p.kind === 'reasoning' ? (p.chunks.at(-1)?.index ?? -1) : Math.max(p.inputChunks.at(-1)?.index ?? -1, p.calledAt ?? -1),
    ),
  )
  const [stalledAt, setStalledAt] = useState<number | undefined>(undefined)
  useEffect(() => {
    if (!streaming) return
    const timer = setTimeout(() => setStalledAt(lastChunk), STALL_MS)
    return () => clearTimeout(timer)
  }, [streaming, lastChunk])
  return streaming && stalledAt !== undefined && stalledAt === lastChunk
}

function TypingIndicator() {
  return (
    <div className="flex h-7 items-center gap-1" role="status">
      <span className="sr-only">The assistant is thinking…</span>
      {[0, 150, 300].map((delay) => (
        <span
          key={delay}
          aria-hidden="true"
          className="size-1.5 animate-dot rounded-full bg-neutral-400 dark:bg-neutral-500"
          style={{ animationDelay: `${delay}ms` }}
        />
      ))}
    </div>
  )
}

/** One line: the answer's model got these images' names, not the pictures (lib/chat/answer/file-parts.ts). */
function UnseenImages({ names, model }: { names: string; model: string | undefined }) {
  const label = useModels().labelOf(model)
  return (
    <p data-testid="answer-unseen-images" className="mb-1.5 text-xs text-neutral-500 dark:text-neutral-400">
      {label ?? 'This model'} can’t see images, so it was given only their names: {names}.
    </p>
  )
}
