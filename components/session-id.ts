/**
 * Session ids are UUIDs, checked as the API checks them (lib/http/route.ts, zod's `uuid()`): anything else
 * cannot exist. zod's own pattern, not zod: the shell checks the open chat's id on every page, and zod was
 * ~110 KB of its JavaScript (session-id.test.ts holds the two to the same answers).
 */
const UUID =
  /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$/

export function isSessionId(id: string): boolean {
  return UUID.test(id)
}
