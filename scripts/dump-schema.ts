/**
 * `npm run db:dump`: writes lib/store/schema.sql, the schema a fresh database has once a2's and the
 * app's migrations ran (lib/store/schema-dump.ts), from an in-memory PGlite: offline, no Postgres.
 * lib/store/schema-dump.test.ts fails while the file and the migrations differ.
 */
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { openPgliteStore } from '@/lib/a2/server'
import { migrateDatabase } from '@/lib/store/migrate'
import { dumpSchema } from '@/lib/store/schema-dump'

const store = await openPgliteStore()
try {
  await migrateDatabase(store)
  const file = path.join(process.cwd(), 'lib', 'store', 'schema.sql')
  writeFileSync(file, await dumpSchema(store))
  console.log(`wrote ${path.relative(process.cwd(), file)}`)
} finally {
  await store.close()
}
