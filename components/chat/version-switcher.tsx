'use client'
import { useLayoutEffect, useRef } from 'react'

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
  const prevRef = useRef<HTMLButtonElement>(null)
  const nextRef = useRef<HTMLButtonElement>(null)
  // At either end the pressed button turns disabled, which drops focus to <body>: focus moves
  // to the other one, once it is enabled (a disabled button cannot take focus).
  const focusAfter = useRef<HTMLButtonElement | null>(null)
  useLayoutEffect(() => {
    focusAfter.current?.focus()
    focusAfter.current = null
  })
  if (count < 2) return null
  const select = (v: number) => {
    focusAfter.current = v === 0 ? nextRef.current : v === count - 1 ? prevRef.current : null
    onSelect(v)
  }
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
        ref={prevRef}
        data-testid="version-prev"
        className={button}
        disabled={version === 0}
        onClick={() => select(version - 1)}
        aria-label={`Previous version of this ${what}`}
      >
        ‹
      </button>
      <span data-testid="version-label" className="min-w-8 text-center tabular-nums" aria-live="polite">
        {version + 1}/{count}
      </span>
      <button
        type="button"
        ref={nextRef}
        data-testid="version-next"
        className={button}
        disabled={version === count - 1}
        onClick={() => select(version + 1)}
        aria-label={`Next version of this ${what}`}
      >
        ›
      </button>
    </div>
  )
}
