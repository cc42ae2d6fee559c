/**
 * Where a call's idempotency key travels in an MCP request: `params._meta`, under a prefixed
 * name as the specification asks of `_meta` keys (a reverse-DNS label, then a slash). A server
 * that honours it makes a repeat of the key one effect; one that does not simply ignores it.
 */
export const MCP_IDEMPOTENCY_META = 'chat.a2/idempotency-key'
