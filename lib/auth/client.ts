'use client'
/** The browser's side of accounts: better-auth's React client on this origin's /api/auth. */
import { passkeyClient } from '@better-auth/passkey/client'
import { createAuthClient } from 'better-auth/react'

export const authClient = createAuthClient({ plugins: [passkeyClient()] })

/** better-auth's error for a failed call, as one sentence for the page. */
export function authMessage(error: { message?: string; status?: number } | null | undefined): string | undefined {
  if (!error) return undefined
  if (error.status === 429) return 'Too many attempts from here. Wait a minute and try again.'
  return error.message || `Something went wrong (HTTP ${error.status ?? '?'})`
}
