'use client'
/**
 * Runs (jobs): status, attempts, cancel version, the transition history with reasons, and
 * effects. An operator sees every user's runs, where they ran, and can resolve an UNKNOWN
 * effect by hand — it happened, or it did not — which settles the run. An end user sees
 * their own runs' history only, and can sign in as an operator with the operator token.
 */
import Link from 'next/link'
import { useCallback, useEffect, useState } from 'react'

interface Run {
  id: number
  sessionId: string
  eventId: string
  consumer: string
  status: string
  attempt: number
  maxAttempts: number
  cancelVersion: number
  cancelledBy: { id: string; index: number } | null
  /** The worker holding it (host and pid): operators only. */
  owner?: string | null
  leaseUntil?: string | null
  lastError: { message: string } | null
  createdAt: string
  updatedAt: string
}
interface Transition {
  id: number
  attempt: number
  fromStatus: string | null
  toStatus: string
  reason: string
  detail: unknown
  at: string
}
interface Effect {
  key: string
  status: string
  attempt: number
  cancelVersion: number
  result: unknown
  error: unknown
  updatedAt: string
  /** Ended by the user's Stop (recorded FAILED, the call having been closed): shown as STOPPED. */
  stopped?: boolean
}

const STATUS_STYLE: Record<string, string> = {
  ACTIVE: 'bg-sky-100 text-sky-800 dark:bg-sky-950 dark:text-sky-200',
  CANCELLING: 'bg-amber-100 text-amber-800 dark:bg-amber-950 dark:text-amber-200',
  CANCELLED: 'bg-neutral-200 text-neutral-800 dark:bg-neutral-800 dark:text-neutral-200',
  COMPLETED: 'bg-emerald-100 text-emerald-800 dark:bg-emerald-950 dark:text-emerald-200',
  FAILED: 'bg-red-100 text-red-800 dark:bg-red-950 dark:text-red-200',
  UNKNOWN: 'bg-fuchsia-100 text-fuchsia-800 dark:bg-fuchsia-950 dark:text-fuchsia-200',
  DONE: 'bg-emerald-100 text-emerald-800 dark:bg-emerald-950 dark:text-emerald-200',
  DISPATCHED: 'bg-sky-100 text-sky-800 dark:bg-sky-950 dark:text-sky-200',
  INTENT: 'bg-neutral-100 text-neutral-700 dark:bg-neutral-800 dark:text-neutral-300',
  CANCELLED_BEFORE_DISPATCH: 'bg-neutral-200 text-neutral-800 dark:bg-neutral-800 dark:text-neutral-200',
  STOPPED: 'bg-neutral-200 text-neutral-800 dark:bg-neutral-800 dark:text-neutral-200',
}

function Badge({ status }: { status: string }) {
  return (
    <span
      data-testid="status-badge"
      className={`rounded-full px-2 py-0.5 font-mono text-[11px] font-semibold ${STATUS_STYLE[status] ?? STATUS_STYLE.INTENT}`}
    >
      {status}
    </span>
  )
}

async function getJson<T>(url: string, init?: RequestInit): Promise<T> {
  const response = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init?.headers } })
  const body = (await response.json()) as T & { error?: { message: string } }
  if (!response.ok) throw Object.assign(new Error(body.error?.message ?? `HTTP ${response.status}`), { status: response.status })
  return body
}

export function RunsView() {
  const [runs, setRuns] = useState<Run[] | undefined>()
  const [operator, setOperator] = useState(false)
  const [error, setError] = useState<string>()
  const [open, setOpen] = useState<number>()

  const load = useCallback(async () => {
    try {
      const answer = await getJson<{ runs: Run[]; operator: boolean }>('/api/runs')
      setRuns(answer.runs)
      setOperator(answer.operator)
      setError(undefined)
    } catch (e) {
      // 401: a browser with no identity yet (a link opened first) has no chats, so no runs.
      if ((e as { status?: number }).status === 401) {
        setRuns([])
        setError(undefined)
      } else setError((e as Error).message)
    }
  }, [])

  useEffect(() => {
    void load()
    const timer = setInterval(load, 3000)
    return () => clearInterval(timer)
  }, [load])

  return (
    <main id="main" className="mx-auto w-full max-w-5xl px-3 py-8 sm:px-6" data-testid="runs-page" data-operator={operator}>
      <div className="mb-6 flex flex-wrap items-end justify-between gap-3">
        <div>
          <Link href="/" className="text-sm text-neutral-500 hover:text-neutral-800 dark:hover:text-neutral-200">
            ← Back to chats
          </Link>
          <h1 className="mt-1 text-2xl font-semibold tracking-tight">{operator ? 'Runs · operator' : 'Runs'}</h1>
          <p className="text-sm text-neutral-600 dark:text-neutral-400">
            {operator
              ? "Every user's generations as the runtime sees them: status, attempts, workers, history and effects."
              : 'Every generation of your chats as the runtime sees it: status, attempts, cancel version and history.'}
          </p>
        </div>
        <button
          onClick={() => void load()}
          className="rounded-lg border border-neutral-300 px-3 py-1.5 text-sm hover:bg-neutral-100 focus-visible:outline-2 dark:border-neutral-700 dark:hover:bg-neutral-800"
        >
          Refresh
        </button>
      </div>
      {error && (
        <p role="alert" className="mb-4 rounded-lg bg-red-50 px-3 py-2 text-sm text-red-800 dark:bg-red-950 dark:text-red-200">
          {error}
        </p>
      )}
      <OperatorSignIn operator={operator} onChanged={load} />
      {runs === undefined ? (
        !error && <p className="text-sm text-neutral-500">Loading…</p>
      ) : runs.length === 0 ? (
        <p className="text-sm text-neutral-500">No runs yet: send a message in a chat.</p>
      ) : (
        // Scrolls sideways rather than clipping when a phone is narrower than the table.
        <div className="overflow-x-auto rounded-xl border border-neutral-200 dark:border-neutral-800">
          <table className="w-full text-left text-sm">
            <thead className="bg-neutral-50 text-xs uppercase tracking-wide text-neutral-500 dark:bg-neutral-900">
              <tr>
                <th className="px-3 py-2">Run</th>
                <th className="px-3 py-2">Status</th>
                <th className="hidden px-3 py-2 sm:table-cell">Attempts</th>
                <th className="hidden px-3 py-2 sm:table-cell">Cancel v.</th>
                <th className="px-2 py-2 sm:px-3">Chat</th>
                <th className="px-2 py-2 sm:px-3">Updated</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((run) => (
                <RunRow
                  key={run.id}
                  run={run}
                  operator={operator}
                  open={open === run.id}
                  onToggle={() => setOpen(open === run.id ? undefined : run.id)}
                  onChanged={load}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  )
}

function RunRow({
  run,
  operator,
  open,
  onToggle,
  onChanged,
}: {
  run: Run
  operator: boolean
  open: boolean
  onToggle: () => void
  onChanged: () => void
}) {
  return (
    <>
      <tr data-testid="run-row" data-status={run.status} className="border-t border-neutral-200 dark:border-neutral-800">
        <td className="px-3 py-2">
          <button onClick={onToggle} aria-expanded={open} className="font-mono text-xs underline-offset-2 hover:underline focus-visible:outline-2">
            #{run.id} {run.consumer}
          </button>
        </td>
        <td className="px-3 py-2">
          <Badge status={run.status} />
        </td>
        <td className="hidden px-3 py-2 tabular-nums sm:table-cell">
          {run.attempt} / {run.maxAttempts}
        </td>
        <td className="hidden px-3 py-2 tabular-nums sm:table-cell">{run.cancelVersion}</td>
        <td className="px-2 py-2 sm:px-3">
          {/* A list of links all named "open" says nothing out of context (a screen reader's links list). */}
          <Link
            className="text-xs text-sky-700 hover:underline dark:text-sky-300"
            href={`/c/${run.sessionId}`}
            aria-label={`Open the chat of run #${run.id}`}
          >
            open
          </Link>
        </td>
        <td className="px-2 py-2 text-xs whitespace-nowrap text-neutral-500 sm:px-3">{new Date(run.updatedAt).toLocaleTimeString()}</td>
      </tr>
      {open && (
        <tr className="border-t border-neutral-100 bg-neutral-50/60 dark:border-neutral-800 dark:bg-neutral-900/40">
          <td colSpan={6} className="px-3 py-3">
            <RunDetail id={run.id} operator={operator} onChanged={onChanged} />
          </td>
        </tr>
      )}
    </>
  )
}

function RunDetail({ id, operator, onChanged }: { id: number; operator: boolean; onChanged: () => void }) {
  const [detail, setDetail] = useState<{ job: Run; history: Transition[]; effects: Effect[] }>()
  const [error, setError] = useState<string>()
  const load = useCallback(async () => {
    try {
      setDetail(await getJson(`/api/runs/${id}`))
    } catch (e) {
      setError((e as Error).message)
    }
  }, [id])
  useEffect(() => {
    void load()
  }, [load])

  const resolve = async (key: string, done: boolean) => {
    try {
      await getJson(`/api/runs/${id}/effects/${encodeURIComponent(key)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ done }),
      })
      await load()
      onChanged()
    } catch (e) {
      setError((e as Error).message)
    }
  }

  if (error) return <p className="text-sm text-red-700 dark:text-red-300">{error}</p>
  if (!detail) return <p className="text-sm text-neutral-500">Loading…</p>
  const { job, history, effects } = detail
  return (
    <div className="grid gap-4 md:grid-cols-2" data-testid="run-detail">
      <section>
        <p className="mb-2 text-xs text-neutral-600 sm:hidden dark:text-neutral-400">
          Attempt {job.attempt} / {job.maxAttempts} · cancel v{job.cancelVersion}
        </p>
        {operator && job.owner && (
          <p className="mb-2 font-mono text-xs text-neutral-600 dark:text-neutral-400" data-testid="run-worker">
            Worker {job.owner}
          </p>
        )}
        <h2 className="mb-2 text-xs font-semibold uppercase tracking-wide text-neutral-500">History</h2>
        <ol className="space-y-1 font-mono text-xs">
          {history.map((t) => (
            <li key={t.id} data-testid="transition">
              <span className="text-neutral-500">
                {new Date(t.at).toLocaleTimeString()} · attempt {t.attempt} ·{' '}
              </span>
              {t.fromStatus ?? '—'} → {t.toStatus} <span className="font-semibold">{t.reason}</span>
            </li>
          ))}
        </ol>
        {job.lastError && <p className="mt-2 text-xs text-red-700 dark:text-red-300">Last error: {job.lastError.message}</p>}
        {job.cancelledBy && <p className="mt-2 text-xs text-neutral-600 dark:text-neutral-400">Cancelled by event #{job.cancelledBy.index}</p>}
      </section>
      <section>
        <h2 className="mb-2 text-xs font-semibold uppercase tracking-wide text-neutral-500">Effects</h2>
        {effects.length === 0 ? (
          <p className="text-xs text-neutral-500">No effects recorded.</p>
        ) : (
          <ul className="space-y-2">
            {effects.map((e) => (
              <li
                key={e.key}
                data-testid="effect"
                data-status={e.status}
                className="rounded-lg border border-neutral-200 p-2 text-xs dark:border-neutral-800"
              >
                <div className="flex items-center justify-between gap-2">
                  <span className="font-mono">{e.key}</span>
                  <Badge status={e.stopped ? 'STOPPED' : e.status} />
                </div>
                <p className="mt-1 text-neutral-500">
                  attempt {e.attempt} · observed cancel v{e.cancelVersion}
                </p>
                {operator && e.status === 'UNKNOWN' && (
                  <div className="mt-2 flex gap-2">
                    <button
                      onClick={() => void resolve(e.key, true)}
                      className="rounded-md bg-emerald-600 px-2 py-1 font-medium text-white hover:bg-emerald-500 focus-visible:outline-2"
                    >
                      It happened
                    </button>
                    <button
                      onClick={() => void resolve(e.key, false)}
                      className="rounded-md border border-neutral-300 px-2 py-1 hover:bg-neutral-100 focus-visible:outline-2 dark:border-neutral-700 dark:hover:bg-neutral-800"
                    >
                      It did not happen
                    </button>
                  </div>
                )}
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  )
}

/** An end user can become an operator with the operator token; an operator can sign out. */
function OperatorSignIn({ operator, onChanged }: { operator: boolean; onChanged: () => void }) {
  const [token, setToken] = useState('')
  const [error, setError] = useState<string>()
  const send = async (method: 'POST' | 'DELETE') => {
    try {
      await getJson('/api/operator', { method, body: method === 'POST' ? JSON.stringify({ token }) : '{}' })
      setToken('')
      setError(undefined)
      onChanged()
    } catch (e) {
      setError((e as Error).message)
    }
  }
  if (operator) {
    return (
      <p className="mb-4 text-xs text-neutral-500">
        Signed in as an operator.{' '}
        <button onClick={() => void send('DELETE')} className="underline hover:text-neutral-800 dark:hover:text-neutral-200">
          Sign out
        </button>
      </p>
    )
  }
  return (
    <details className="mb-4 text-sm">
      <summary className="cursor-pointer text-xs text-neutral-500">Operator sign-in</summary>
      <form
        className="mt-2 flex flex-wrap gap-2"
        onSubmit={(event) => {
          event.preventDefault()
          void send('POST')
        }}
      >
        <input
          type="password"
          autoComplete="off"
          aria-label="Operator token"
          data-testid="operator-token"
          value={token}
          onChange={(event) => setToken(event.target.value)}
          className="min-w-0 flex-1 rounded-lg border border-neutral-300 px-2 py-1 dark:border-neutral-700 dark:bg-neutral-900"
        />
        <button
          type="submit"
          data-testid="operator-sign-in"
          className="rounded-lg border border-neutral-300 px-3 py-1 hover:bg-neutral-100 dark:border-neutral-700 dark:hover:bg-neutral-800"
        >
          Sign in
        </button>
      </form>
      {error && <p className="mt-1 text-xs text-red-700 dark:text-red-300">{error}</p>}
    </details>
  )
}
