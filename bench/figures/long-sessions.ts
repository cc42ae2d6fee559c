/**
 * Figure 8 — Long sessions: what opening a chat costs a client and starting an answer (push →
 * first chunk on the tail) costs, in a session of 1k, 10k, 50k and 100k events (answers of 20
 * chunks each) and of 50k user messages, beside a fresh session in the same run; with the
 * worker's event-loop delay while it answers there. Opening is what a user waits for: an HTTP
 * GET of the first screen (the app's snapshot route) from a client on loopback, timed to its
 * body's last byte, and its bytes; and the server heap one open takes while it is served. The
 * histories are written straight into the log (appending 100k events one by one takes minutes).
 */
import v8 from 'node:v8'
import vm from 'node:vm'
import { performance } from 'node:perf_hooks'
import type { ChatRig, CpuSample } from '../lib/rig'
import { OWNER, openSse } from '../lib/http'
import { seedLongHistory } from '@/test/long-history'
import { prompt } from '../lib/upstream'
import { within } from '../lib/time'
import { summarize, type Summary } from '../lib/stats'
import { chatFold } from '@/lib/chat/fold/checkpoint'
import { snapshotFold, snapshotResponse } from '@/lib/chat/server/snapshot'
import { forgetFolds } from '@/lib/a2/internal/log/checkpoints'

export interface LongSessionLevel {
  label: string
  events: number
  /** The first open: no checkpoint yet, every event folded (and a checkpoint written). */
  coldOpenMs: number
  /** GET of the first screen from a client, to its body's last byte. */
  open: { ours: Summary; baseline: Summary }
  /** The first screen's body, as the client received it. */
  snapshotBytes: number
  baselineBytes: number
  /** Server heap taken by one warm open (the fold and the answer's body), KiB: median of the opens. */
  heldKiB: { ours: number; baseline: number }
  /**
   * The same GET and heap in a process that holds no folded state (after a restart, on another
   * instance, or once the 64 MiB of remembered states moved on): the newest checkpoint is read whole.
   */
  openNoState: { ours: Summary; baseline: Summary }
  heldNoStateKiB: { ours: number; baseline: number }
  firstToken: { ours: Summary; baseline: Summary }
  cpu: CpuSample
}

/** Writes `answers` answered messages (or, with `messagesOnly`, that many user messages) into a new session. */
async function seed(rig: ChatRig, answers: number, messagesOnly: boolean): Promise<{ id: string; head: number; lastAnswer?: string }> {
  const { id } = await rig.chat.sessions.create(OWNER)
  return { id, ...(await seedLongHistory(rig.store, id, { answers, messagesOnly, delta: 'a token of some answer ' })) }
}

/** Opening the chat as a browser does: GET its first screen over HTTP, read to the end. */
async function open(rig: ChatRig, id: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now()
  const response = await fetch(`${rig.http.url}/snapshot/${id}`)
  const bytes = (await response.arrayBuffer()).byteLength
  if (!response.ok) throw new Error(`the first screen of ${id} answered ${response.status}`)
  return { ms: performance.now() - started, bytes }
}

/** Opens of each chat before the measured ones, a level. */
const WARM_OPENS = 5

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void

/**
 * The heap one open takes on the server while it is served: collected before, then the fold
 * and the route's body made and held, in this process (the rig's app side). An upper bound:
 * garbage the open made and no collection took yet counts too.
 */
async function held(rig: ChatRig, id: string): Promise<number> {
  gc()
  const before = process.memoryUsage().heapUsed
  const response = snapshotResponse({ kind: 'first' }, await rig.chat.fold(id, OWNER, chatFold, snapshotFold({ kind: 'first' })))
  const body = await response.arrayBuffer()
  const after = process.memoryUsage().heapUsed
  void body.byteLength
  return (after - before) / 1024
}

let seq = 0

/** Push a message and its generate; the time until its first chunk reaches a tail; then Stop it. */
async function firstToken(rig: ChatRig, id: string, after: string | undefined, timeoutMs: number): Promise<number> {
  const session = await rig.chat.sessions.get(id, OWNER)
  const n = ++seq
  let lastIndex = session.head - 1
  let markFirst!: (at: number) => void
  const first = new Promise<number>((resolve) => (markFirst = resolve))
  const client = openSse(`${rig.http.url}/a2/${id}?after=${session.head - 1}`, ({ data, at }) => {
    lastIndex = data.index
    if (data.type === 'chunk' && data.payload.of === `g${n}`) markFirst(at)
  })
  try {
    await within(client.opened, timeoutMs, 'SSE tail to open')
    const started = performance.now()
    await rig.chat.push(id, OWNER, {
      events: [
        { id: `m${n}`, type: 'message', payload: { text: prompt(`long${process.pid}x${n}`, 40), ...(after ? { after } : {}) } },
        { id: `g${n}`, type: 'generate', payload: { for: `m${n}` } },
      ],
    })
    const at = await within(first, timeoutMs, 'the first token')
    await rig.chat.push(id, OWNER, { id: `c${n}`, type: 'cancelled', payload: { of: `g${n}`, lastSeenIndex: lastIndex } })
    return at - started
  } finally {
    client.close()
    await rig.settled(20_000)
  }
}

export async function longSessionFigure(
  rig: ChatRig,
  options: {
    levels: Array<{ label: string; answers: number; messagesOnly?: boolean }>
    /** Opens of each chat a level (and heap samples of each): enough for a stable median. */
    opens: number
    /** Opens of each chat a level in a process that holds no folded state. */
    opensNoState: number
    /** Answers started in each chat a level. */
    rounds: number
    deadline: number
    timeoutMs?: number
  },
): Promise<LongSessionLevel[]> {
  const timeoutMs = options.timeoutMs ?? 30_000
  const out: LongSessionLevel[] = []
  for (const level of options.levels) {
    if (Date.now() > options.deadline) break
    const long = await seed(rig, level.answers, level.messagesOnly ?? false)
    await rig.cpu()
    const cold = await open(rig, long.id)
    const fresh = await seed(rig, 1, false)
    const baselineBytes = (await open(rig, fresh.id)).bytes // its first open folds it: both sides are warm below
    // Unmeasured opens of both first, so the measured ones find the route's code compiled and its connections open.
    for (let i = 0; i < WARM_OPENS; i++) for (const chat of [fresh, long]) await open(rig, chat.id)
    const opens = { ours: [] as number[], baseline: [] as number[] }
    const heaps = { ours: [] as number[], baseline: [] as number[] }
    // The two chats' opens alternate, each going first every other time, so the machine's load
    // drifting within the level (the fresh baseline moved 3.4–8.1 ms within one run) weighs on both alike.
    for (let i = 0; i < options.opens; i++) {
      const order = i % 2 === 0 ? ([fresh, long] as const) : ([long, fresh] as const)
      for (const chat of order) (chat === long ? opens.ours : opens.baseline).push((await open(rig, chat.id)).ms)
      for (const chat of order) (chat === long ? heaps.ours : heaps.baseline).push(await held(rig, chat.id))
    }
    const unremembered = { ours: [] as number[], baseline: [] as number[] }
    const coldHeaps = { ours: [] as number[], baseline: [] as number[] }
    for (let i = 0; i < options.opensNoState; i++) {
      const order = i % 2 === 0 ? ([fresh, long] as const) : ([long, fresh] as const)
      for (const chat of order) {
        forgetFolds()
        ;(chat === long ? unremembered.ours : unremembered.baseline).push((await open(rig, chat.id)).ms)
        forgetFolds()
        ;(chat === long ? coldHeaps.ours : coldHeaps.baseline).push(await held(rig, chat.id))
      }
    }
    const tokens = { ours: [] as number[], baseline: [] as number[] }
    for (let round = 0; round < options.rounds; round++) {
      tokens.baseline.push(await firstToken(rig, fresh.id, fresh.lastAnswer, timeoutMs))
      tokens.ours.push(await firstToken(rig, long.id, long.lastAnswer, timeoutMs))
    }
    out.push({
      label: level.label,
      events: long.head,
      coldOpenMs: cold.ms,
      snapshotBytes: cold.bytes,
      baselineBytes,
      open: { ours: summarize(opens.ours), baseline: summarize(opens.baseline) },
      heldKiB: { ours: summarize(heaps.ours).p50, baseline: summarize(heaps.baseline).p50 },
      openNoState: { ours: summarize(unremembered.ours), baseline: summarize(unremembered.baseline) },
      heldNoStateKiB: { ours: summarize(coldHeaps.ours).p50, baseline: summarize(coldHeaps.baseline).p50 },
      firstToken: { ours: summarize(tokens.ours), baseline: summarize(tokens.baseline) },
      cpu: await rig.cpu(),
    })
  }
  return out
}
