/**
 * Runs once per server process before any request: checks the environment (an invalid
 * configuration stops the process here with one message), stamps every request with its
 * socket address (per-address limits), opens the store (running migrations), starts the
 * embedded worker and installs graceful shutdown. Everything Node-only is imported inside
 * the nodejs branch, so the edge bundle of this file is empty.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { checkEnvAtBoot } = await import('./lib/env')
    checkEnvAtBoot()
    const { stampPeerAddress } = await import('./lib/http/peer-address')
    stampPeerAddress()
    const { bootChatProcess } = await import('./lib/chat/server/process')
    await bootChatProcess()
  }
}
