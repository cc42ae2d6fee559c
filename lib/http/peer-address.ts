/**
 * Stamps every request this process's HTTP servers receive with the socket's address
 * (PEER_HEADER), replacing any value a client sent under that name. Route handlers see only
 * headers, and Next keeps a client-sent X-Forwarded-For as is, so without this the
 * per-address limits would key on whatever a client claims. Installed once at boot
 * (instrumentation), before the first request.
 */
import http from 'node:http'
import { PEER_HEADER } from './request-facts'

const installed = globalThis as unknown as { __a2PeerStamp?: boolean }

export function stampPeerAddress(): void {
  if (installed.__a2PeerStamp) return
  installed.__a2PeerStamp = true
  const emit = http.Server.prototype.emit
  http.Server.prototype.emit = function (this: http.Server, event: string, ...args: unknown[]) {
    if (event === 'request') {
      const request = args[0] as http.IncomingMessage
      const address = request.socket?.remoteAddress
      if (address) request.headers[PEER_HEADER] = address
      else delete request.headers[PEER_HEADER]
    }
    return Reflect.apply(emit, this, [event, ...args]) as boolean
  } as typeof emit
}
