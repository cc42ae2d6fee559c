/** The operator audit: one row per effect resolution, whatever its outcome. */
import type { Store } from '@/lib/a2/server'
import { operatorAudit } from '@/db/schema'

export async function recordResolution(
  store: Store,
  entry: { operator: string; jobId: number; effectKey: string; verdict: unknown; outcome: string },
): Promise<void> {
  await store.db.insert(operatorAudit).values({ action: 'resolve_effect', ...entry, verdict: entry.verdict ?? null })
}
