'use client'

/**
 * ‹ 2/3 ›: browses the versions of one message or answer (regenerate and edit keep them all).
 * Renders nothing for a turn with one version.
 */
export function VersionSwitcher({
  version,
  count,
  what,
  onSelect,
}: {
  /** 0-based. */
  version: number
  count: number
  /** "answer" or "message", for the buttons' labels. */
  what: string
  onSelect: (version: number) => void
}) {
  if (count < 2) return null
  const button =
    'inline-flex size-7 items-center justify-center rounded-lg text-base leading-none text-neutral-500 hover:bg-neutral-100 hover:text-neutral-900 disabled:cursor-default disabled:opacity-30 disabled:hover:bg-transparent dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100'
  return (
    <div
      data-testid="version-switcher"
      role="group"
      aria-label={`Versions of this ${what}`}
      className="inline-flex items-center text-xs text-neutral-500 dark:text-neutral-400"
    >
      <button
        type="button"
        data-testid="version-prev"
        className={button}
        disabled={version === 0}
        onClick={() => onSelect(version - 1)}
        aria-label={`Previous version of this ${what}`}
      >
        ‹
      </button>
      <span data-testid="version-label" className="min-w-8 text-center tabular-nums" aria-live="polite">
        {version + 1}/{count}
      </span>
      <button
        type="button"
        data-testid="version-next"
        className={button}
        disabled={version === count - 1}
        onClick={() => onSelect(version + 1)}
        aria-label={`Next version of this ${what}`}
      >
        ›
      </button>
    </div>
  )
}
