/**
 * lib/store/schema.sql is the database as the migrations leave it: a fresh database, migrated as
 * the app migrates at start, dumps to exactly that file, on PGlite and on Postgres. A migration
 * added without `npm run db:dump` (or a hand edit of the file) fails here.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { layers, useTestStore } from '@/test/db'
import { dumpSchema } from './schema-dump'

/** Opening and migrating a PGlite took 7–13 s at a load of 15–20 (under 2 s idle). */
const OPENS_DATABASE_MS = 120_000

describe.each(layers)('the live schema, on %s', (kind) => {
  const store = useTestStore(kind)
  it('is lib/store/schema.sql', { timeout: OPENS_DATABASE_MS }, async () => {
    const checkedIn = readFileSync(path.join(process.cwd(), 'lib', 'store', 'schema.sql'), 'utf8')
    expect(await dumpSchema(store())).toBe(checkedIn)
  })
})
