/**
 * Process lifecycle for the app and the standalone worker: boot once, and on SIGTERM or
 * SIGINT stop claiming, finish or surrender in-flight attempts, close the database, exit.
 * The start script sets NEXT_MANUAL_SIG_HANDLE=true so Next leaves these signals to us
 * (its own handler exits before async cleanup).
 */
import { startFileSweep } from '@/lib/files/sweep'
import { getChatServer, shutdownChatServer, type ChatServer } from './chat-server'

/** 15 s: the default lease. Past it a successor may claim anyway, so waiting longer buys nothing. */
const SHUTDOWN_DEADLINE_MS = 15_000

export async function bootChatProcess(options: { worker?: boolean } = {}): Promise<ChatServer> {
  const chatServer = await getChatServer(options)
  const flag = globalThis as unknown as { __a2Signals?: boolean }
  if (!flag.__a2Signals) {
    flag.__a2Signals = true
    startFileSweep()
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        console.log(`[a2] ${signal}: finishing or surrendering in-flight runs`)
        setTimeout(() => process.exit(1), SHUTDOWN_DEADLINE_MS).unref()
        shutdownChatServer()
          .catch((error) => console.error('[a2] shutdown failed', error))
          .finally(() => process.exit(0))
      })
    }
  }
  return chatServer
}
