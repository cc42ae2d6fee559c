import { defineConfig } from 'drizzle-kit'

/**
 * The app's own tables only (db/schema.ts): a2's are the library's migrations (lib/a2/sql).
 * Applied at start after a2's by lib/store/migrate.ts.
 */
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema.ts',
  out: './db/migrations',
})
