/**
 * createServer({ contract, consumers, store }) wires a contract's consumers to a store:
 * the append routing (which jobs an event starts, which runs it cancels), pushes from
 * browsers, reads and tails, and workers.
 */
import { LEASED } from './core/transitions'
import { sql } from 'drizzle-orm'
import type { Consumer } from './runtime/consumer'
import { checkJsonValue, validateInput, type A2Event, type Contract, type EventDefinition, type EventInput, type EventOf } from './core/contract'
import { A2Error } from './core/errors'
import {
  append,
  read,
  type AppendResult,
  type CancelRoute,
  type Fence,
  type JobRoute,
  type Routing,
  type SessionCaps,
  type ValidInput,
} from './log/append'
import {
  createSession,
  deleteSession,
  transferSessions,
  unresolvedSessions,
  getOwnedSession,
  listSessions,
  openRuns,
  renameSession,
  searchSessions,
  type OpenRun,
  type SessionMatch,
  type SessionSummary,
} from './log/sessions'
import { query, type Executor, type Store } from './store/store'
import { tail } from './log/tail'
import { foldSession, type Fold, type Folded } from './log/checkpoints'
import { Worker, type WorkerOptions } from './runtime/worker'
import { DEFAULT_MAX_ATTEMPTS } from './runtime/runtime-host'
import { busFor } from './log/bus'
import { pushedEvents } from './core/wire'
import { operator, type A2Operator } from './runtime/operator'
import { readAdmitContext, type AdmitContext } from './log/admit-context'

/** Most events one push may carry: a message and its generate request fit many times over. */
export const MAX_EVENTS_PER_PUSH = 20

export interface ServerOptions<C extends Contract> {
  contract: C
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each consumer has its own trigger types
  consumers: ReadonlyArray<Consumer<C, any>>
  store: Store
  /**
   * What one session may hold. `maxEvents` counts every event, the consumers' steps too: a
   * step batch past it is refused `session_full` (the answer ends; its terminal event is not a
   * step and lands). Pushes are checked against these unless they pass their own; no cap ever
   * refuses a Stop (an `abortOn` event) of an open run.
   */
  caps?: SessionCaps
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- routing spans every consumer, whatever its contract and trigger types
export function buildRouting(consumers: ReadonlyArray<Consumer<any, any>>): Routing {
  const jobs = new Map<string, JobRoute[]>()
  const cancels = new Map<string, CancelRoute[]>()
  for (const { options } of consumers) {
    for (const type of options.types as string[]) {
      const list = jobs.get(type) ?? []
      list.push({ consumer: options.name, lane: options.lane ?? null, maxAttempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS })
      jobs.set(type, list)
    }
    const abortOn = options.abortOn
    if (!abortOn) continue
    const entries: Array<[string, CancelRoute['predicate']]> = Array.isArray(abortOn)
      ? abortOn.map((type: string) => [type, undefined])
      : Object.entries(abortOn as Record<string, CancelRoute['predicate']>)
    for (const [type, predicate] of entries) {
      const list = cancels.get(type) ?? []
      list.push({ consumer: options.name, predicate })
      cancels.set(type, list)
    }
  }
  return {
    jobsFor: (type) => jobs.get(type) ?? [],
    cancelsFor: (type) => cancels.get(type) ?? [],
  }
}

/** What a push's admission is handed (`push(…, { admit })`). */
export interface PushFound<C extends Contract = Contract> {
  /** The session's events with the pushed ids and the `refersTo` ids. */
  events: Array<EventOf<C>>
  /**
   * Runs still running in the session, with the event that started each: `ACTIVE` (queued or
   * streaming) or `CANCELLING` (a cancel is recorded; the run is unwinding).
   */
  running: Array<{ jobId: number; consumer: string; status: 'ACTIVE' | 'CANCELLING'; eventId: string; payload: unknown }>
}

/** A push's own options (`server.push(…, options)`). */
export interface AppendOptions<C extends Contract = Contract> {
  caps?: SessionCaps
  /** Ids of other events the admission needs to see (what the pushed events refer to). */
  refersTo?: (inputs: ReadonlyArray<{ id?: string; type: string; payload: unknown }>) => readonly string[]
  /**
   * The app's own admission, after validation and before the append: a throw refuses
   * the push with nothing written (references to other events, concurrency caps). It is
   * handed what one read of the session found: the events with the pushed ids and the
   * `refersTo` ids, and the runs still running (queued, streaming or being cancelled).
   */
  admit?: (inputs: ReadonlyArray<{ id?: string; type: string; payload: unknown }>, found: PushFound<C>) => Promise<void>
}

/** What `createServer` returns: the one object an app holds for its contract, store and consumers. */
export interface A2Server<C extends Contract = Contract> {
  readonly contract: C
  readonly store: Store
  /** Which jobs an event starts and which runs it cancels, from the consumers' `types` and `abortOn`. */
  readonly routing: Routing
  /** Server-side append (consumers, seeds, tests): any type of the contract. */
  append(sessionId: string, ...inputs: Array<EventInput<C>>): Promise<Array<EventOf<C>>>
  /**
   * A browser's push: one event or `{ events: [...] }`, validated against the contract
   * (browser-pushable types only), into a session the owner holds. All or nothing.
   */
  push(sessionId: string, owner: string, body: unknown, options?: AppendOptions<C>): Promise<{ events: Array<EventOf<C>>; duplicate: boolean }>
  /** Events after `after`, for the session's owner. */
  read(sessionId: string, owner: string, options?: { after?: number; before?: number; limit?: number }): Promise<Array<EventOf<C>>>
  /**
   * The owner's session folded by `reducer` up to `before` (default: its head), from the newest checkpoint, with the session row.
   * `partial`: part of the state may do (the codec's partial read, §12); the result's `partial: true` says it is part.
   */
  fold<S>(
    sessionId: string,
    owner: string,
    reducer: Fold<S>,
    options?: { before?: number; partial?: boolean },
  ): Promise<Folded<S> & { session: SessionSummary; partial?: true }>
  runs: {
    /** How many runs of `consumer` are running, of one owner or of everyone: what a concurrency cap counts. */
    countOpen(filter: { consumer: string; owner?: string }): Promise<number>
  }
  /** A live tail for the session's owner; ends when `signal` aborts. */
  tail(sessionId: string, owner: string, options: { after: number; signal: AbortSignal; pollMs?: number }): Promise<AsyncGenerator<Array<EventOf<C>>>>
  sessions: A2Sessions
  /** Starts a worker in this process for the server's consumers. */
  startWorker(options?: WorkerOptions): Promise<Worker>
  operator: A2Operator
  /** Live bus subscriptions: a test guard that SSE clients leave nothing behind. */
  subscriptions(): Promise<number>
  /** Stops every worker this server started (in-flight attempts finish or are surrendered). */
  stopWorkers(options?: { graceMs?: number }): Promise<void>
}

/** `server.sessions`: an owner's sessions. */
export interface A2Sessions {
  create(owner: string, init?: { id?: string; title?: string }): Promise<SessionSummary>
  get(sessionId: string, owner: string): Promise<SessionSummary>
  list(owner: string, page?: { limit?: number; before?: string }): Promise<{ sessions: SessionSummary[]; nextBefore?: string }>
  /** How many sessions an owner holds: what a per-user cap counts. */
  count(owner: string): Promise<number>
  /** Sets the title and appends `a2.renamed` in one transaction; `{ event: false }`: the row only. */
  rename(sessionId: string, owner: string, title: string, options?: { event?: boolean }): Promise<A2Event | undefined>
  /** Deletes the session, its log, jobs and their history and effects. Stop its open runs first (`openRuns`). */
  delete(sessionId: string, owner: string, options?: { within?: (tx: Executor) => Promise<void> }): Promise<void>
  /** Gives every session of `from` to `to`, with the app's own rows (`within`) in the same transaction; returns how many moved. */
  transfer(from: string, to: string, options?: { within?: (tx: Executor) => Promise<void> }): Promise<number>
  /** The owner's sessions whose title or `in` events' text contains `text`. */
  search(owner: string, text: string, options: { limit?: number; in: { type: string; field: string } }): Promise<SessionMatch[]>
  /** Those of these sessions with a run an operator has yet to settle (what `delete` refuses as `unresolved`). Pass only sessions the caller owns. */
  unresolved(sessionIds: readonly string[]): Promise<string[]>
  /** Runs of these sessions not yet settled. Pass only sessions the caller owns. */
  openRuns(sessionIds: readonly string[]): Promise<OpenRun[]>
}

export function createServer<C extends Contract>(options: ServerOptions<C>): A2Server<C> {
  const { contract, store } = options
  const consumers = new Map<string, Consumer>()
  for (const c of options.consumers as unknown as ReadonlyArray<Consumer>) {
    if (consumers.has(c.options.name)) throw new Error(`two consumers are named "${c.options.name}"`)
    if (c.options.contract !== contract) throw new Error(`consumer "${c.options.name}" was defined for another contract`)
    consumers.set(c.options.name, c)
  }
  const routing = buildRouting([...consumers.values()])
  const definitions = contract.events as Record<string, EventDefinition>

  const prepare = (input: unknown, origin: 'browser' | 'server'): ValidInput => {
    const valid = validateInput(contract, input, origin)
    const stepOf = definitions[valid.type].stepOf?.(valid.payload as never)
    return stepOf ? { ...valid, stepOf } : valid
  }

  const serverAppend = async (
    sessionId: string,
    inputs: ReadonlyArray<{ id?: string; type: string; payload: unknown }>,
    appendOptions: { fence?: Fence; within?: (tx: Executor) => Promise<void> } = {},
  ): Promise<AppendResult> =>
    append(
      store,
      routing,
      sessionId,
      inputs.map((input) => prepare(input, 'server')),
      { ...appendOptions, stepCap: options.caps?.maxEvents },
    )

  const workers = new Set<Worker>()

  return {
    contract,
    store,
    routing,

    push: (sessionId, owner, body, pushOptions = {}) =>
      pushFromBrowser({ store, routing, prepare, caps: options.caps }, sessionId, owner, body, pushOptions),

    /** Server-side append (consumers, seeds, tests): any type of the contract. */
    async append(sessionId: string, ...inputs: Array<EventInput<C>>): Promise<Array<EventOf<C>>> {
      return (await serverAppend(sessionId, inputs)).events as Array<EventOf<C>>
    },

    /** Events after `after`, for the session's owner. */
    async read(sessionId: string, owner: string, options: { after?: number; before?: number; limit?: number } = {}) {
      await getOwnedSession(store, sessionId, owner)
      return (await read(store.db, sessionId, options)) as Array<EventOf<C>>
    },

    /**
     * The owner's session folded by `reducer` up to `before` (default: its head), from the
     * newest checkpoint: a session of 100k events costs the events since it, not 100k. With
     * the session as read for it (a snapshot needs both: one read of the row, not two).
     * `partial`: part of the state may do (the codec's `partial` read, §12); `partial: true` in
     * the result says it is part.
     */
    async fold<S>(
      sessionId: string,
      owner: string,
      reducer: Fold<S>,
      options: { before?: number; partial?: boolean } = {},
    ): Promise<Folded<S> & { session: SessionSummary; partial?: true }> {
      const session = await getOwnedSession(store, sessionId, owner)
      const before = Math.min(options.before ?? session.head, session.head)
      const folded = await foldSession(store, sessionId, reducer, { before, partial: options.partial })
      return { ...folded, session }
    },

    runs: { countOpen: (filter) => countOpenRuns(store, filter) },

    /** A live tail for the session's owner; ends when `signal` aborts. */
    async tail(sessionId: string, owner: string, options: { after: number; signal: AbortSignal; pollMs?: number }) {
      await getOwnedSession(store, sessionId, owner)
      return tail(store, sessionId, options) as AsyncGenerator<Array<EventOf<C>>>
    },

    sessions: sessionsOf(store, routing),

    /** Starts a worker in this process for the server's consumers. */
    async startWorker(workerOptions: WorkerOptions = {}): Promise<Worker> {
      const worker = new Worker({ store, contract, consumers, append: serverAppend }, workerOptions)
      workers.add(worker)
      return worker.start()
    },

    operator: operator(store),

    /** Live bus subscriptions: a test guard that SSE clients leave nothing behind. */
    async subscriptions(): Promise<number> {
      return (await busFor(store)).size
    },

    /** Stops every worker this server started (in-flight attempts finish or are surrendered). */
    async stopWorkers(stopOptions: { graceMs?: number } = {}): Promise<void> {
      await Promise.all([...workers].map((w) => w.stop(stopOptions)))
      workers.clear()
    },
  }
}

/** A browser's push (A2Server.push): checked whole before anything is read, admitted by the app, then appended all or nothing. */
async function pushFromBrowser<C extends Contract>(
  server: { store: Store; routing: Routing; prepare: (input: unknown, origin: 'browser') => ValidInput; caps?: SessionCaps },
  sessionId: string,
  owner: string,
  body: unknown,
  pushOptions: AppendOptions<C>,
): Promise<{ events: Array<EventOf<C>>; duplicate: boolean }> {
  const { store, routing } = server
  checkJsonValue(body)
  const list = pushedEvents(body)
  if (!list || list.length === 0) throw new A2Error('bad_request', 'push one event or { events: [...] }')
  if (list.length > MAX_EVENTS_PER_PUSH) {
    throw new A2Error('payload_too_large', `at most ${MAX_EVENTS_PER_PUSH} events per push`)
  }
  const inputs = list.map((input) => server.prepare(input, 'browser'))
  const ids = inputs.flatMap((input) => (input.id ? [input.id] : []))
  if (new Set(ids).size !== ids.length) throw new A2Error('bad_request', 'each event in one push needs its own id')
  let context: AdmitContext | undefined
  if (pushOptions.admit) {
    const named = [...ids, ...(pushOptions.refersTo?.(inputs) ?? [])]
    context = await readAdmitContext(store.db, sessionId, { owner, ids: [...new Set(named)] })
    const running = context.unsettledRuns.flatMap((run) =>
      run.status === 'ACTIVE' || run.status === 'CANCELLING' ? [{ ...run, status: run.status }] : [],
    )
    await pushOptions.admit(inputs, {
      events: context.events as Array<EventOf<C>>,
      running: running.map((run) => ({
        jobId: run.jobId,
        consumer: run.consumer,
        status: run.status,
        eventId: run.trigger.id,
        payload: run.trigger.payload,
      })),
    })
  }
  const result = await append(store, routing, sessionId, inputs, { owner, caps: pushOptions.caps ?? server.caps, context })
  return { events: result.events as Array<EventOf<C>>, duplicate: result.duplicate }
}

/** `server.runs.countOpen`: runs of a consumer still leased (ACTIVE or CANCELLING), of one owner or of everyone. */
async function countOpenRuns(store: Store, filter: { consumer: string; owner?: string }): Promise<number> {
  const [row] = await query<{ n: number }>(
    store.db,
    sql`select count(*)::int as n from a2_jobs
        where consumer = ${filter.consumer} and status in ${LEASED}
          ${filter.owner !== undefined ? sql`and session_id in (select id from a2_sessions where owner = ${filter.owner})` : sql``}`,
  )
  return row.n
}

/** `server.sessions`: each a function of log/sessions.ts over this store (A2Sessions says what each does). */
function sessionsOf(store: Store, routing: Routing): A2Sessions {
  return {
    create: (owner, init = {}) => createSession(store, owner, init),
    get: (sessionId, owner) => getOwnedSession(store, sessionId, owner),
    list: (owner, page = {}) => listSessions(store, owner, page),
    count: async (owner) => {
      const [row] = await query<{ n: number }>(store.db, sql`select count(*)::int as n from a2_sessions where owner = ${owner}`)
      return row.n
    },
    rename: (sessionId, owner, title, options = {}) => renameSession(store, routing, sessionId, owner, title, options),
    delete: (sessionId, owner, options = {}) => deleteSession(store, sessionId, owner, options),
    transfer: (from, to, options = {}) => transferSessions(store, from, to, options),
    search: (owner, text, options) => searchSessions(store, owner, text, options),
    unresolved: (sessionIds) => unresolvedSessions(store, sessionIds),
    openRuns: (sessionIds) => openRuns(store, sessionIds),
  }
}
