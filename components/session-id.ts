import { z } from 'zod'

/** Session ids are UUIDs, checked as the API checks them (lib/http/route.ts): anything else cannot exist. */
const sessionId = z.string().uuid()

export function isSessionId(id: string): boolean {
  return sessionId.safeParse(id).success
}
