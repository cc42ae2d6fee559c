/**
 * Runs once per server process before any request: opens the store (running
 * migrations), starts the embedded worker, and installs graceful shutdown. The start
 * script sets NEXT_MANUAL_SIG_HANDLE=true so Next leaves SIGTERM to us: close SSE
 * streams, finish or surrender leases, close the database, then exit.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== 'nodejs') return
  const { getChatServer, shutdownChatServer } = await import('./lib/chat/server')
  await getChatServer()
  const flag = globalThis as unknown as { __a2Signals?: boolean }
  if (flag.__a2Signals) return
  flag.__a2Signals = true
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      console.log(`[a2] ${signal}: shutting down`)
      const force = setTimeout(() => process.exit(1), 15_000)
      force.unref()
      shutdownChatServer()
        .catch((error) => console.error('[a2] shutdown failed', error))
        .finally(() => process.exit(0))
    })
  }
}
