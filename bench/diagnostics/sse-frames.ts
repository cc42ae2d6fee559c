/**
 * Lever (b) of issue 15: is serialising each event's SSE frame once, shared by every tail of
 * its session, worth it? Times, in this process alone, what sseResponse spends framing a
 * batch of chunk events per tail: JSON per tail (today) against a frame cached per event
 * object (the bus decodes a hint's events once, so every tail of a session holds the same
 * objects). Pure CPU, no database: `npx tsx bench/diagnostics/sse-frames.ts`.
 */
import { performance } from 'node:perf_hooks'
import type { A2Event } from '@/lib/a2'
import { encodeSseEvent } from '@/lib/a2/internal/wire'

const EVENTS = 200_000
const BATCH = 8 // chunks per append at 100 streams (figure 2's split)
const encoder = new TextEncoder()

function events(n: number): A2Event[] {
  return Array.from({ length: n }, (_, i) => ({
    id: crypto.randomUUID(),
    sessionId: '6f1c2a3e-0000-4000-8000-000000000000',
    index: i,
    type: 'chunk',
    payload: { of: 'c' + 'x'.repeat(21), attempt: 1, delta: ' token' + i },
    createdAt: new Date().toISOString(),
  }))
}

function perTail(all: A2Event[], tails: number): number {
  const t0 = performance.now()
  for (let b = 0; b < all.length; b += BATCH) {
    for (let t = 0; t < tails; t++) {
      let chunk = ''
      for (let k = b; k < b + BATCH; k++) chunk += encodeSseEvent(all[k])
      encoder.encode(chunk)
    }
  }
  return performance.now() - t0
}

function shared(all: A2Event[], tails: number): number {
  const frames = new WeakMap<A2Event, string>()
  const t0 = performance.now()
  for (let b = 0; b < all.length; b += BATCH) {
    for (let t = 0; t < tails; t++) {
      let chunk = ''
      for (let k = b; k < b + BATCH; k++) {
        let frame = frames.get(all[k])
        if (frame === undefined) frames.set(all[k], (frame = encodeSseEvent(all[k])))
        chunk += frame
      }
      encoder.encode(chunk)
    }
  }
  return performance.now() - t0
}

for (const tails of [1, 2, 4]) {
  const a: number[] = []
  const b: number[] = []
  for (let round = 0; round < 7; round++) {
    a.push(perTail(events(EVENTS), tails))
    b.push(shared(events(EVENTS), tails))
  }
  const median = (xs: number[]) => xs.sort((x, y) => x - y)[xs.length >> 1]
  const us = (ms: number) => ((ms * 1000) / EVENTS).toFixed(2)
  console.log(
    `${tails} tail(s)/session: per tail ${us(median(a))} µs/event, shared ${us(median(b))} µs/event, ratio ${(median(b) / median(a)).toFixed(2)}`,
  )
}
