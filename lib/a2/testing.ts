/**
 * a2 — the test kit, for tests only (ESLint refuses it in code that ships). What a test of an
 * app built on a2 needs and the doors do not give: a raw read of the library's tables.
 */
export { query } from './internal/store'
