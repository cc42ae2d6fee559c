'use client'

interface FinishedBeforeStopProps {
  /** The rest is on screen. */
  showingRest: boolean
  onToggle: () => void
}

/**
 * Under an answer whose Stop reached the server after the answer had finished (the page was
 * cut off while the rest was written): says so, and offers the rest instead of pushing text
 * the reader never saw onto the screen.
 */
export function FinishedBeforeStop({ showingRest, onToggle }: FinishedBeforeStopProps) {
  return (
    <p data-testid="finished-before-stop" className="mt-2 flex flex-wrap items-center gap-x-2 gap-y-1 text-xs text-neutral-500 dark:text-neutral-400">
      <span>The answer had already finished before your Stop could reach the server; it is cut where you stopped reading.</span>
      <button
        type="button"
        data-testid="show-full-answer"
        aria-expanded={showingRest}
        onClick={onToggle}
        className="rounded font-medium text-neutral-700 underline underline-offset-2 hover:text-neutral-900 dark:text-neutral-300 dark:hover:text-neutral-100"
      >
        {showingRest ? 'Show only what you saw' : 'Show the full answer'}
      </button>
    </p>
  )
}
