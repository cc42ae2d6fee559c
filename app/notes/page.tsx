'use client'
/** The notes the assistant saved (say "remember that …" in a chat). */
import Link from 'next/link'
import { useEffect, useState } from 'react'
import { useDocumentTitle } from '@/components/document-title'

interface Note {
  idempotencyKey: string
  sessionId: string
  body: string
  createdAt: string
}

export default function NotesPage() {
  const [notes, setNotes] = useState<Note[]>()
  const [error, setError] = useState<string>()
  useDocumentTitle('a2 chat')
  useEffect(() => {
    fetch('/api/notes')
      .then(async (r) => {
        // 401: a browser with no identity yet (a link opened first) has no chats, so no notes.
        if (r.status === 401) return setNotes([])
        const body = (await r.json()) as { notes?: Note[]; error?: { message: string } }
        if (!r.ok) throw new Error(body.error?.message ?? `HTTP ${r.status}`)
        setNotes(body.notes)
      })
      .catch((e: Error) => setError(e.message))
  }, [])
  return (
    <main id="main" className="mx-auto w-full max-w-2xl px-4 py-8">
      <Link href="/" className="text-sm text-neutral-500 hover:text-neutral-800 dark:hover:text-neutral-200">
        ← Back to chats
      </Link>
      <h1 className="mt-1 mb-1 text-2xl font-semibold tracking-tight">Notes</h1>
      <p className="mb-6 text-sm text-neutral-600 dark:text-neutral-400">
        Saved by the assistant when you ask it to remember something. Each is written once, keyed by its effect.
      </p>
      {error && (
        <p role="alert" className="text-sm text-red-700">
          {error}
        </p>
      )}
      {notes?.length === 0 && <p className="text-sm text-neutral-500">No notes yet. Try “Remember that the demo is on Friday.”</p>}
      <ul className="space-y-2">
        {notes?.map((note) => (
          <li key={note.idempotencyKey} data-testid="note" className="rounded-xl border border-neutral-200 p-3 dark:border-neutral-800">
            <p>{note.body}</p>
            <p className="mt-1 text-xs text-neutral-500">
              {new Date(note.createdAt).toLocaleString()} ·{' '}
              <Link className="hover:underline" href={`/c/${note.sessionId}`}>
                open chat
              </Link>
            </p>
          </li>
        ))}
      </ul>
    </main>
  )
}
