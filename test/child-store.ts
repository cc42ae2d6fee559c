/**
 * The store a child worker (test/chat-worker-process.ts) is killed over: Postgres migrated here
 * before the child opens it, or a PGlite directory the child opens alone (PGlite has one
 * process). `location` is what the child is given; `open` is this process's store, once the child
 * is gone (Postgres: the one opened here); `close` drops or removes it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { openPgliteStore, type Store } from '@/lib/a2/server'
import { createTestDb } from './db'

export interface ChildStore {
  location: string
  open(): Promise<Store>
  close(): Promise<void>
}

export async function storeForChild(kind: 'pglite' | 'postgres', prefix: string): Promise<ChildStore> {
  if (kind === 'postgres') {
    const testDb = await createTestDb('postgres')
    const store = await testDb.open()
    return { location: testDb.url!, open: async () => store, close: () => testDb.drop() }
  }
  const dir = mkdtempSync(path.join(tmpdir(), prefix))
  let store: Store | undefined
  return {
    location: `pglite:${dir}`,
    open: async () => (store ??= await openPgliteStore({ dataDir: dir })),
    close: async () => {
      await store?.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
