import { describe, expect, it } from 'vitest'
import type { A2Event } from '@/lib/a2'
import {
  decodeErrorBody,
  decodeHint,
  decodeHints,
  decodePushAnswer,
  decodeSseEvent,
  encodeHint,
  encodePushBody,
  encodeSseEvent,
  encodeStepBatch,
  packedPrefix,
  pushedEvents,
  WireError,
} from './internal/core/wire'

const event = (index: number, payload: unknown = { text: 'hi' }): A2Event => ({
  id: `e${index}`,
  sessionId: 's1',
  index,
  type: 'message',
  payload,
  createdAt: '2026-01-01T00:00:00.123Z',
})

/** What a2_notify sends: the hint with its events under `e` (migration 0002). */
const notified = (hint: Parameters<typeof encodeHint>[0], events: A2Event[]) =>
  JSON.stringify({ ...JSON.parse(encodeHint(hint)), e: events.map((e) => ({ i: e.index, d: e.id, t: e.type, p: e.payload, c: e.createdAt })) })

const failure = (fn: () => unknown): string => {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(WireError)
    return (error as Error).message
  }
  throw new Error('it did not throw')
}

describe('the wire', () => {
  it('codes a hint in compact keys and decodes it to named fields', () => {
    const hint = {
      sessionId: 's1',
      head: 3,
      newJobs: true,
      cancels: [{ jobId: 7, cancelVersion: 2, eventId: 'c1', eventIndex: 2 }],
    }
    const text = notified(hint, [event(1), event(2, null)])
    expect(JSON.parse(text)).toEqual({
      s: 's1',
      h: 3,
      j: 1,
      c: [[7, 2, 'c1', 2]],
      e: [
        { i: 1, d: 'e1', t: 'message', p: { text: 'hi' }, c: '2026-01-01T00:00:00.123Z' },
        { i: 2, d: 'e2', t: 'message', p: null, c: '2026-01-01T00:00:00.123Z' },
      ],
    })
    expect(decodeHint(text)).toEqual({ ...hint, events: [event(1), event(2, null)] })
    expect(decodeHint(encodeHint({ sessionId: '', head: 0, newJobs: true }))).toEqual({ sessionId: '', head: 0, newJobs: true })
    expect(decodeHint(encodeHint({ sessionId: 's', head: 1, recheckCancels: true }))).toEqual({ sessionId: 's', head: 1, recheckCancels: true })
  })

  it('states a hint event’s time as the log does, whatever offset and precision Postgres sent', () => {
    const text = JSON.stringify({ s: 's1', h: 1, e: [{ i: 0, d: 'a', t: 'x', p: 1, c: '2026-01-01T02:00:00.123456+02:00' }] })
    expect(decodeHint(text).events![0].createdAt).toBe('2026-01-01T00:00:00.123Z')
  })

  it('leaves the events of a session this process does not tail undecoded', () => {
    const text = notified({ sessionId: 's1', head: 1 }, [event(0)])
    expect(decodeHint(text, () => false)).toEqual({ sessionId: 's1', head: 1 })
  })

  it('refuses a hint of the wrong shape, naming the field', () => {
    expect(failure(() => decodeHint('{'))).toBe('a2 wire: NOTIFY hint: not JSON')
    expect(failure(() => decodeHint('[1]'))).toBe('a2 wire: NOTIFY hint: the payload is not an object')
    expect(failure(() => decodeHint('{"h":1}'))).toBe('a2 wire: NOTIFY hint: s (session id) is not a string')
    expect(failure(() => decodeHint('{"s":"a","h":1.5}'))).toBe('a2 wire: NOTIFY hint: h (head) is not an integer ≥ 0')
    expect(failure(() => decodeHint('{"s":"a","h":1,"j":true}'))).toBe('a2 wire: NOTIFY hint: j (new jobs) is not 1')
    expect(failure(() => decodeHint('{"s":"a","h":1,"c":[[1,1,"e","2"]]}'))).toBe('a2 wire: NOTIFY hint: c[0][3] (event index) is not an integer ≥ 0')
    expect(failure(() => decodeHint('{"s":"a","h":1,"e":[{"i":0,"d":"a","t":"x","c":"2026-01-01"}]}'))).toBe(
      'a2 wire: NOTIFY hint: e[0].p (payload) is missing',
    )
    expect(failure(() => decodeHint('{"s":"a","h":1,"e":[{"i":0,"d":"a","t":"x","p":1,"c":"soon"}]}'))).toBe(
      'a2 wire: NOTIFY hint: e[0].c (created at) is not a timestamp',
    )
  })

  it('decodes a packed payload of many sessions’ hints, and a single hint as one', () => {
    const packed = `${packedPrefix('me')}"m":[${notified({ sessionId: 's1', head: 1 }, [event(0)])},{"s":"s2","h":7}]}`
    expect(decodeHints(packed)).toEqual([
      { sessionId: 's1', head: 1, events: [event(0)] },
      { sessionId: 's2', head: 7 },
    ])
    expect(decodeHints(notified({ sessionId: 's1', head: 1 }, [event(0)]))).toEqual([{ sessionId: 's1', head: 1, events: [event(0)] }])
    expect(failure(() => decodeHints('{"o":"me","m":[{"s":1,"h":1}]}'))).toBe('a2 wire: NOTIFY hint: s (session id) is not a string')
    expect(failure(() => decodeHints('{"o":"me","m":{}}'))).toBe('a2 wire: NOTIFY hint: m (hints) is not an array')
    expect(failure(() => decodeHints('{"o":1,"m":[]}'))).toBe('a2 wire: NOTIFY hint: o (origin) is not a string')
  })

  it('codes a step batch for a2_append_steps_many', () => {
    const batch = { sessionId: 's1', jobId: 4, attempt: 2, runs: ['g1'], events: [{ id: 'x', type: 'chunk', payload: { delta: 'a' } }] }
    expect(JSON.parse(encodeStepBatch(batch))).toEqual({ s: 's1', j: 4, a: 2, r: ['g1'], e: batch.events })
    expect(JSON.parse(encodeStepBatch({ ...batch, maxEvents: 50_000 }))).toEqual({ s: 's1', j: 4, a: 2, r: ['g1'], e: batch.events, m: 50_000 })
  })

  it('frames an event for SSE and decodes the frame’s data back', () => {
    const frame = encodeSseEvent(event(5, { text: 'two\nlines' }))
    expect(frame).toBe(`id: 5\ndata: ${JSON.stringify(event(5, { text: 'two\nlines' }))}\n\n`)
    expect(frame.split('\n')).toHaveLength(4) // one data line: JSON escapes the newline
    expect(decodeSseEvent(frame.split('\n')[1].slice('data: '.length))).toEqual(event(5, { text: 'two\nlines' }))
  })

  it('refuses an SSE frame that is not an event, naming the field', () => {
    expect(failure(() => decodeSseEvent('hello'))).toBe('a2 wire: SSE event: not JSON')
    const { index: _, ...noIndex } = event(1)
    expect(failure(() => decodeSseEvent(JSON.stringify(noIndex)))).toBe('a2 wire: SSE event: index is not an integer ≥ 0')
    const { payload: __, ...noPayload } = event(1)
    expect(failure(() => decodeSseEvent(JSON.stringify(noPayload)))).toBe('a2 wire: SSE event: payload is missing')
  })

  it('sends one pushed event bare and several as { events }, and reads both back', () => {
    const one = { id: 'c1', type: 'message', payload: { text: 'a' } }
    const two = { type: 'generate', payload: { for: 'c1' } }
    expect(JSON.parse(encodePushBody([one]))).toEqual(one)
    expect(JSON.parse(encodePushBody([one, two]))).toEqual({ events: [one, two] })
    expect(pushedEvents(JSON.parse(encodePushBody([one])))).toEqual([one])
    expect(pushedEvents(JSON.parse(encodePushBody([one, two])))).toEqual([one, two])
    expect(pushedEvents({ events: 'x' })).toBeUndefined()
  })

  it('decodes a push answer and an error body, and refuses what is neither', () => {
    expect(decodePushAnswer({ events: [event(0)], duplicate: true })).toEqual({ events: [event(0)], duplicate: true })
    expect(failure(() => decodePushAnswer({ events: [{ ...event(0), id: 1 }] }))).toBe('a2 wire: push answer events[0]: id is not a string')
    expect(decodeErrorBody({ error: { code: 'not_found', message: 'no such session' } })).toEqual({ code: 'not_found', message: 'no such session' })
    expect(decodeErrorBody('<html>')).toBeUndefined()
    expect(decodeErrorBody({ error: { code: 1, message: 'x' } })).toBeUndefined()
  })
})
