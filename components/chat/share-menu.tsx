'use client'
/**
 * The open chat's Share and Export: a read-only link (made, copied, revoked) and the chat as
 * Markdown or JSON. The link's token is shown once, when it is made: the server keeps only its
 * hash, so a lost link is replaced, not looked up.
 */
import { useEffect, useRef, useState } from 'react'
import { CopyButton } from './copy-button'

export function ShareMenu({ sessionId }: { sessionId: string }) {
  const [open, setOpen] = useState(false)
  const [live, setLive] = useState<boolean>()
  const [link, setLink] = useState<string>()
  const [error, setError] = useState<string>()
  const panelRef = useRef<HTMLDivElement>(null)
  const base = `/api/sessions/${encodeURIComponent(sessionId)}`

  useEffect(() => {
    if (!open) return
    let current = true
    fetch(`${base}/share`)
      .then((r) => r.json() as Promise<{ shared?: boolean }>)
      .then((body) => current && setLive(Boolean(body.shared)))
      .catch(() => current && setError('Could not ask whether this chat is shared.'))
    return () => {
      current = false
    }
  }, [open, base])

  const call = async (method: 'POST' | 'DELETE') => {
    setError(undefined)
    const response = await fetch(`${base}/share`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: method === 'POST' ? '{}' : undefined,
    })
    if (!response.ok) return setError(`The server answered ${response.status}.`)
    if (method === 'POST') {
      const { path } = (await response.json()) as { path: string }
      setLink(new URL(path, window.location.origin).toString())
      setLive(true)
    } else {
      setLink(undefined)
      setLive(false)
    }
  }

  const item = 'rounded-lg px-2 py-1.5 text-left text-sm hover:bg-neutral-100 dark:hover:bg-neutral-800'
  return (
    <div className="relative">
      <button
        type="button"
        data-testid="share-button"
        aria-expanded={open}
        aria-controls="share-panel"
        onClick={() => setOpen((o) => !o)}
        className="inline-flex h-9 items-center rounded-lg px-3 text-sm text-neutral-600 hover:bg-neutral-100 hover:text-neutral-900 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
      >
        Share
      </button>
      {open && (
        <div
          id="share-panel"
          ref={panelRef}
          role="region"
          aria-label="Share and export"
          className="absolute right-0 z-20 mt-1 w-80 space-y-2 rounded-xl border border-neutral-200 bg-white p-3 shadow-lg dark:border-neutral-800 dark:bg-neutral-900"
        >
          <p className="text-sm text-neutral-600 dark:text-neutral-400">
            {live
              ? 'Anyone with the link can read this chat, live. They cannot write to it.'
              : 'Make a link anyone can read this chat with. Nobody can write through it.'}
          </p>
          {link && (
            <div className="flex items-center gap-1">
              <input
                readOnly
                value={link}
                data-testid="share-link"
                aria-label="Read-only link"
                className="min-w-0 flex-1 rounded-lg border border-neutral-300 px-2 py-1 text-xs dark:border-neutral-700 dark:bg-neutral-950"
              />
              <CopyButton text={link} label="Copy link" />
            </div>
          )}
          <div className="flex flex-col">
            <button type="button" className={item} data-testid="share-create" onClick={() => void call('POST')}>
              {live ? 'Make a new link (the old one stops working)' : 'Create a read-only link'}
            </button>
            {live && (
              <button type="button" className={item} data-testid="share-revoke" onClick={() => void call('DELETE')}>
                Stop sharing
              </button>
            )}
            <a className={item} href={`${base}/export?format=markdown`} download data-testid="export-markdown">
              Export as Markdown
            </a>
            <a className={item} href={`${base}/export?format=json`} download data-testid="export-json">
              Export as JSON
            </a>
          </div>
          {error && (
            <p role="alert" className="text-sm text-red-700 dark:text-red-400">
              {error}
            </p>
          )}
        </div>
      )}
    </div>
  )
}
