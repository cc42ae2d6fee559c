/**
 * Runs once per server process before any request: opens the store (running
 * migrations), starts the embedded worker and installs graceful shutdown. Everything
 * Node-only is imported inside the nodejs branch, so the edge bundle of this file is empty.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { bootChatProcess } = await import('./lib/chat/process')
    await bootChatProcess()
  }
}
