/**
 * The chat's limits the page shows as well as the server enforces, in a module of their own: the
 * page imports them without the contract's schemas (and zod, ~110 KB of the shell's JavaScript).
 */

/** 16k characters: a long pasted document fits; the payload bound (64 KiB) still holds with JSON escaping. */
export const MAX_MESSAGE_CHARS = 16_000
