'use client'
import { useState } from 'react'

// Three Q&A turns and a composer, rendered in the browser: what a chat page must at least do.
const TURNS = [
  ['What is a durable log?', 'An append-only sequence of events kept in a database, so that every reader sees the same history in the same order.'],
  [
    'Why does Stop need one?',
    'Because the browser, the server and the worker each see the Stop at a different moment; one log orders it against the answer being written.',
  ],
  ['What happens after a Stop?', 'The worker sees the cancellation, closes the model request, and the answer ends where the reader saw it end.'],
]

export default function Page() {
  const [turns, setTurns] = useState(TURNS)
  const [text, setText] = useState('')
  const send = (e) => {
    e.preventDefault()
    if (!text.trim()) return
    setTurns((t) => [...t, [text, '…']])
    setText('')
  }
  return (
    <main style={{ maxWidth: 768, margin: '0 auto', padding: 16 }}>
      <h1 style={{ fontSize: 20 }}>bare page</h1>
      {turns.map(([q, a], i) => (
        <section key={i} aria-label={`Turn ${i + 1}`}>
          <p style={{ background: '#f5f5f5', borderRadius: 16, padding: '8px 12px', marginLeft: '20%' }}>{q}</p>
          <p>{a}</p>
        </section>
      ))}
      <form onSubmit={send} style={{ display: 'flex', gap: 8 }}>
        <label htmlFor="message" style={{ position: 'absolute', left: -9999 }}>
          Message
        </label>
        <textarea id="message" value={text} onChange={(e) => setText(e.target.value)} rows={2} style={{ flex: 1, fontSize: 16 }} />
        <button type="submit" style={{ fontSize: 16, padding: '8px 16px', background: '#171717', color: '#fff', border: 0, borderRadius: 8 }}>
          Send
        </button>
      </form>
    </main>
  )
}
