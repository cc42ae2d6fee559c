/**
 * Child processes of the bench: spawned with an IPC channel, tracked, and always ended by
 * their own pid when the run finishes, fails or is interrupted. A child also exits by
 * itself when the IPC channel closes (the parent died), so nothing outlives a run.
 *
 * A child runs as `node --import tsx <file>`: what `npx tsx <file>` runs, without npx's
 * extra wrapper process in between (so the IPC channel and the pid are the child's own).
 */
import { fork, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { wallNow } from './time'

const live = new Set<ChildProcess>()

export interface Child {
  process: ChildProcess
  /** What the child said when it was ready (`{ type: 'ready', ... }`). */
  ready: any
  /** Sends a command and resolves with the child's reply (matched by id). */
  call<T = unknown>(command: Record<string, unknown>, timeoutMs?: number): Promise<T>
  /** Messages the child sends unprompted (`{ type: ... }` without a reply id). */
  on(listener: (message: any) => void): () => void
  /** Offset to add to the child's wallNow() to get the parent's (NTP-style estimate). */
  clockOffset(): Promise<{ offsetMs: number; rttMs: number }>
  stop(): Promise<void>
}

export async function spawnChild(
  file: string,
  args: string[],
  options: {
    env?: Record<string, string>
    execArgv?: string[]
    readyTimeoutMs?: number
    /** Another checkout to run the child from (its own code and tsconfig paths; figure 9's --ab). Default: this one. */
    root?: string
  } = {},
): Promise<Child> {
  const root = options.root ?? process.cwd()
  const child = fork(path.join(root, 'bench', file), args, {
    cwd: root,
    execArgv: ['--import', 'tsx', ...(options.execArgv ?? [])],
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  live.add(child)
  child.once('exit', () => live.delete(child))

  let nextId = 1
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>()
  const listeners = new Set<(message: any) => void>()
  child.on('message', (message: any) => {
    if (message && typeof message.replyTo === 'number') {
      const waiter = pending.get(message.replyTo)
      pending.delete(message.replyTo)
      if (message.error) waiter?.reject(new Error(`${file}: ${message.error}`))
      else waiter?.resolve(message.value)
      return
    }
    for (const listener of listeners) listener(message)
  })
  child.once('exit', (code, signal) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${file} exited (${code ?? signal})`))
    pending.clear()
  })

  const call = <T>(command: Record<string, unknown>, timeoutMs = 60_000): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++
      const timer = setTimeout(() => {
        pending.delete(id)
        reject(new Error(`${file}: ${String(command.cmd)} got no answer within ${timeoutMs} ms`))
      }, timeoutMs)
      pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      })
      child.send({ ...command, id })
    })

  const ready = await new Promise<any>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${file} did not start within ${options.readyTimeoutMs ?? 30_000} ms`)),
      options.readyTimeoutMs ?? 30_000,
    )
    const onMessage = (message: any) => {
      if (message?.type === 'ready') {
        clearTimeout(timer)
        child.off('message', onMessage)
        resolve(message)
      }
    }
    child.on('message', onMessage)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${file} exited with ${code} before it was ready`))
    })
  })

  return {
    process: child,
    ready,
    call,
    on(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    async clockOffset() {
      // Ten round trips; keep the one with the smallest RTT (least queueing in between).
      let best = { offsetMs: 0, rttMs: Infinity }
      for (let i = 0; i < 10; i++) {
        const sent = wallNow()
        const theirs = await call<number>({ cmd: 'clock' })
        const received = wallNow()
        const rtt = received - sent
        if (rtt < best.rttMs) best = { offsetMs: (sent + received) / 2 - theirs, rttMs: rtt }
      }
      return best
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      try {
        child.send({ cmd: 'exit', id: 0 })
      } catch {
        // channel already closed
      }
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    },
  }
}

/** Tracks a process spawned elsewhere (figure 13's `next start`s) so the run's way out ends it too. */
export function track(child: ChildProcess): void {
  live.add(child)
  child.once('exit', () => live.delete(child))
}

/** Ends every child still alive, by pid. Used on the way out of the run (normal or not). */
export function killChildren(): void {
  for (const child of live) {
    try {
      child.kill('SIGKILL')
    } catch {
      // already gone
    }
  }
  live.clear()
}

/**
 * The child side: answer commands from the parent. `handlers[cmd]` returns the reply value.
 * `exit` runs `onExit` then exits; a closed channel (the parent died) exits at once.
 */
export function serveParent(handlers: Record<string, (message: any) => unknown | Promise<unknown>>, onExit: () => Promise<void>): void {
  const send = (message: unknown) => {
    try {
      process.send?.(message)
    } catch {
      // parent gone
    }
  }
  let exiting = false
  const exit = async (code: number) => {
    if (exiting) return
    exiting = true
    const hard = setTimeout(() => process.exit(code), 5_000)
    hard.unref()
    try {
      await onExit()
    } finally {
      process.exit(code)
    }
  }
  process.on('disconnect', () => void exit(0))
  process.on('message', async (message: any) => {
    if (message?.cmd === 'exit') return exit(0)
    if (message?.cmd === 'clock') return send({ replyTo: message.id, value: wallNow() })
    const handler = handlers[message?.cmd]
    if (!handler) return send({ replyTo: message?.id, error: `unknown command ${message?.cmd}` })
    try {
      send({ replyTo: message.id, value: await handler(message) })
    } catch (error) {
      send({ replyTo: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
    }
  })
}

export function tellParent(message: unknown): void {
  try {
    process.send?.(message)
  } catch {
    // parent gone
  }
}
