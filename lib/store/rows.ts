/** Rows of a raw statement's result, whichever driver ran it (postgres-js returns an array, PGlite `{ rows }`). */
export const rowsOf = <T>(result: unknown): T[] => (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]
