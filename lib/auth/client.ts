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

/**
 * A passkey sign-in's failure, said as what the user can do next. The browser reports "no
 * passkey for this site on this device" and "you closed the prompt" alike (WebAuthn's
 * NotAllowedError, so a page cannot probe which credentials a device holds): one sentence names
 * both. A refusal by the server (a passkey of a deleted account, or one removed from it) says so.
 */
export function passkeySignInMessage(error: { code?: string; message?: string; status?: number } | null | undefined): string | undefined {
  if (!error) return undefined
  if (error.status === 429) return authMessage(error)
  if (error.code === 'PASSKEY_NOT_FOUND')
    return 'This passkey belongs to no account here: the account was deleted, or the passkey was removed from it. Sign in with your email and password, or create an account.'
  // The browser's own refusals: better-auth's AUTH_CANCELLED, or @simplewebauthn's ERROR_* codes.
  if (error.code === 'AUTH_CANCELLED' || error.code?.startsWith('ERROR_'))
    return 'No passkey was used: this device has none for this site, or the prompt was closed. Try again, or sign in with your email and password.'
  return `The passkey was not accepted (${error.message || `HTTP ${error.status ?? '?'}`}). Try again, or sign in with your email and password.`
}

/** Adding a passkey failed: the two cases a user causes, in their words; anything else as the server said it. */
export function passkeyAddMessage(error: { code?: string; message?: string; status?: number }): string | undefined {
  if (error.code === 'ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED') return 'This device already holds a passkey for this account.'
  if (error.code === 'ERROR_CEREMONY_ABORTED' || error.code === 'ERROR_PASSTHROUGH_SEE_CAUSE_PROPERTY')
    return 'No passkey was added: the prompt was closed.'
  return authMessage(error)
}
