'use client'
import { useEffect, useState } from 'react'
import type { PushError } from '@/lib/a2/react'
import { AlertIcon, RefreshIcon, XIcon } from '../icons'

/**
 * What failed, in the chat's words, with Retry (held back while a rate limit's wait runs) and
 * Dismiss. Its own module: the "/" page shows it too, and importing it from chat.tsx brought the
 * whole conversation (Markdown and its parsers, 195 KB) into that page.
 */
export function ErrorAlert({
  error,
  lost,
  onRetry,
  onDismiss,
}: {
  error: Pick<PushError, 'code' | 'message'> & { inputs?: PushError['inputs']; status?: number; retryAfterS?: number }
  /** What the failure held back, when the error carries no pushed events to tell (a new chat's first message). */
  lost?: 'message'
  onRetry?: () => void
  onDismiss: () => void
}) {
  const types = new Set(error.inputs?.map((i) => i.type))
  if (lost) types.add(lost)
  const what = types.has('message')
    ? 'Your message wasn’t sent.'
    : types.has('cancelled')
      ? 'Stop didn’t reach the server.'
      : types.has('generate')
        ? 'The answer couldn’t be requested.'
        : 'Something went wrong.'
  const limited = error.code === 'rate_limited' || error.status === 429
  const wait = useCountdown(limited ? retryAfterSeconds(error) : undefined, error)
  return (
    <div
      role="alert"
      data-testid="error-alert"
      data-code={error.code}
      className="mb-2 flex items-start gap-3 rounded-2xl border border-red-200 bg-red-50 px-3.5 py-2.5 text-sm text-red-800 dark:border-red-900/60 dark:bg-red-950/50 dark:text-red-200"
    >
      <AlertIcon className="mt-0.5 size-4 shrink-0" />
      <div className="min-w-0 flex-1">
        <p className="font-medium">{what}</p>
        <p className="break-words text-red-700/90 dark:text-red-300/90">
          {error.message}
          {/* The server's words say which limit; when they do not say when, the wait is added. */}
          {limited &&
            !namesSeconds(error.message) &&
            (wait > 0 ? ` — try again in ${wait} ${wait === 1 ? 'second' : 'seconds'}.` : ' — you can try again now.')}
        </p>
      </div>
      {onRetry && (
        <button
          type="button"
          onClick={onRetry}
          disabled={wait > 0}
          className="inline-flex shrink-0 items-center gap-1.5 rounded-lg border border-red-300 bg-white px-2.5 py-1 font-medium text-red-800 tabular-nums hover:bg-red-100 disabled:cursor-not-allowed disabled:opacity-60 dark:border-red-800 dark:bg-red-950 dark:text-red-100 dark:hover:bg-red-900/60"
        >
          <RefreshIcon className="size-3.5" />
          {wait > 0 ? `Retry in ${wait} s` : 'Retry'}
        </button>
      )}
      <button
        type="button"
        onClick={onDismiss}
        aria-label="Dismiss"
        className="inline-flex size-7 shrink-0 items-center justify-center rounded-lg text-red-700 hover:bg-red-100 dark:text-red-300 dark:hover:bg-red-900/60"
      >
        <XIcon className="size-4" />
      </button>
    </div>
  )
}

/**
 * Seconds until a rate-limited request may be tried again: the server's Retry-After (carried
 * as `retryAfterS` where the client read the header), else the seconds its message names.
 */
function retryAfterSeconds(error: { message: string; retryAfterS?: number }): number {
  if (typeof error.retryAfterS === 'number' && Number.isFinite(error.retryAfterS)) return Math.max(0, Math.ceil(error.retryAfterS))
  const named = NAMED_SECONDS.exec(error.message)
  return named ? Number(named[1]) : 0
}

/** "try again in 12 s" — how the server's 429 messages name the wait. */
const NAMED_SECONDS = /(\d+)\s*(?:s|sec|seconds?)\b/i

function namesSeconds(message: string): boolean {
  return NAMED_SECONDS.test(message)
}

/** Counts down from `seconds` to 0, once a second; starts again for each new error (`of`). */
function useCountdown(seconds: number | undefined, of: unknown): number {
  const [now, setNow] = useState(() => Date.now())
  const [started, setStarted] = useState(() => ({ of, until: seconds ? now + seconds * 1000 : 0 }))
  if (started.of !== of) {
    const at = Date.now()
    setNow(at)
    setStarted({ of, until: seconds ? at + seconds * 1000 : 0 })
  }
  const until = started.of === of ? started.until : 0
  useEffect(() => {
    if (!until || now >= until) return
    const timer = setTimeout(() => setNow(Date.now()), Math.min(1000, until - now))
    return () => clearTimeout(timer)
  }, [until, now])
  return until ? Math.max(0, Math.ceil((until - now) / 1000)) : 0
}
