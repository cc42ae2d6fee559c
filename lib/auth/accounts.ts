/**
 * Accounts, on better-auth: passkeys, and email and password (its own scrypt hashing, sign-in rate limits
 * in the database so every instance shares them), verification and password reset through
 * the mail outbox (mail.ts). Guests stay as they are (guest.ts); signing up or in moves the
 * guest's chats to the account (adopt-guest.ts) and ends the guest cookie.
 *
 * Opened lazily on the app's store, like the store itself: Next evaluates routes as separate
 * module copies, so the instance is kept on globalThis.
 */
import { betterAuth } from 'better-auth'
import { drizzleAdapter } from 'better-auth/adapters/drizzle'
import { createAuthMiddleware } from 'better-auth/api'
import { passkey } from '@better-auth/passkey'
import { authAccount, authPasskey, authRateLimit, authSession, authUser, authVerification } from '@/db/schema'
import { env } from '@/lib/env'
import { getStore } from '@/lib/store'
import type { Store } from '@/lib/a2/server'
import { readCookie } from '@/lib/http/cookies'
import { requestHost } from '@/lib/http/request-facts'
import { adoptGuest } from './adopt-guest'
import { eraseAccountData } from './erase-account'
import { cookieName, currentUser as currentGuest, getSecret } from './guest'
import { queueMail } from './mail'
import { MIN_PASSWORD_LENGTH } from './password-rule'

/**
 * The header better-auth reads the client's address from (its sign-in limits are per
 * address): the auth route sets it from clientIp, which trusts a proxy's X-Forwarded-For
 * only with A2_TRUST_PROXY, as every other limit of the app does.
 */
export const CLIENT_IP_HEADER = 'x-a2-client-ip'

/**
 * better-auth's cookies: `__Host-a2.…` with Secure on an https deployment (A2_PUBLIC_URL), so
 * neither a subdomain nor a plain-http page can set one for this origin (a planted session);
 * better-auth's own choice there is `__Secure-`, which a subdomain can still set. `a2.…` on
 * http (development, the test suites), where browsers refuse `__Host-`. Only this one name is
 * read: a valid token under another name is no account.
 */
function cookieNames(): { prefix: string; secure: boolean } {
  const secure = env().A2_PUBLIC_URL?.startsWith('https://') ?? false
  return { prefix: secure ? '__Host-a2' : 'a2', secure }
}
/**
 * Without A2_PUBLIC_URL, accounts answer on loopback hosts only (development, the test
 * suites): the links in account mail are built from the request's host, and a host a client
 * names (a Host header of evil.example) would put a reset token in a link to anywhere.
 */
const LOOPBACK_HOSTS = ['localhost', 'localhost:*', '127.0.0.1', '127.0.0.1:*', '[::1]', '[::1]:*']
const LOOPBACK = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/

/** Whether accounts answer on this request's host: any with A2_PUBLIC_URL, loopback only without (better-auth would throw, a 500). */
export function servesAccounts(request: Request): boolean {
  return env().A2_PUBLIC_URL !== undefined || LOOPBACK.test(requestHost(request))
}

function createAccounts(store: Store) {
  return betterAuth({
    appName: 'a2 chat',
    secret: getSecret().toString(),
    baseURL: env().A2_PUBLIC_URL ?? { allowedHosts: LOOPBACK_HOSTS, protocol: 'http' },
    database: drizzleAdapter(store.db, {
      provider: 'pg',
      schema: {
        user: authUser,
        session: authSession,
        account: authAccount,
        verification: authVerification,
        rateLimit: authRateLimit,
        passkey: authPasskey,
      },
    }),
    emailAndPassword: {
      enabled: true,
      // A sign-up answers the same whether the email is new or taken (same body, a password hashed
      // either way), so it tells no one which emails have accounts; the page then signs in.
      autoSignIn: false,
      onExistingUserSignUp: ({ user }) =>
        queueMail({
          to: user.email,
          subject: 'Someone tried to create an a2 chat account with your email',
          text: 'Your account is unchanged. If it was you, sign in instead (or reset your password).',
          link: '/account',
        }),
      minPasswordLength: MIN_PASSWORD_LENGTH,
      revokeSessionsOnPasswordReset: true,
      sendResetPassword: ({ user, url }) =>
        queueMail({ to: user.email, subject: 'Reset your a2 chat password', text: `Set a new password: ${url}`, link: url }),
    },
    // Deleting the account erases every row of it first (erase-account.ts); a chat with an
    // unsettled call refuses it, with nothing erased.
    user: { deleteUser: { enabled: true, beforeDelete: (user) => eraseAccountData(user) } },
    emailVerification: {
      sendOnSignUp: true,
      autoSignInAfterVerification: true,
      sendVerificationEmail: ({ user, url }) =>
        queueMail({ to: user.email, subject: 'Verify your email for a2 chat', text: `Verify your email: ${url}`, link: url }),
    },
    // No cookie cache: each request reads its session (one indexed row), so a session revoked
    // anywhere (sign-out, a password reset) refuses the very next request, not one 30 s later.
    rateLimit: {
      enabled: true,
      storage: 'database',
      // better-auth's defaults for its sign-in and sign-up paths (3 per 10 s) would refuse a
      // user who mistypes twice; 10 a minute per address (the default) still makes guessing a password slow.
      customRules: {
        '/sign-in/email': { window: 60, max: env().A2_RATE_ACCOUNT_ATTEMPTS_PER_MIN_PER_ADDRESS },
        '/sign-up/email': { window: 60, max: env().A2_RATE_ACCOUNT_ATTEMPTS_PER_MIN_PER_ADDRESS },
        '/request-password-reset': { window: 60, max: 5 },
      },
    },
    // The relying party is A2_PUBLIC_URL's host, or `localhost` without it (WebAuthn refuses an IP address as one).
    plugins: [passkey({ rpName: 'a2 chat' })],
    advanced: {
      cookiePrefix: cookieNames().prefix,
      // The prefix above says it; better-auth's own would make it `__Secure-__Host-a2.…`.
      useSecureCookies: false,
      defaultCookieAttributes: { secure: cookieNames().secure },
      ipAddress: { ipAddressHeaders: [CLIENT_IP_HEADER] },
    },
    hooks: {
      after: createAuthMiddleware(async (ctx) => {
        const signedIn = ctx.context.newSession
        const request = ctx.request
        if (!signedIn || !request) return
        const guest = currentGuest(request)
        if (!guest) return
        await adoptGuest(guest, signedIn.user.id)
        // The guest identity is spent: its chats are the account's now.
        const name = cookieName(request)
        ctx.setCookie(name, '', { path: '/', maxAge: 0, httpOnly: true, sameSite: 'lax', secure: name.startsWith('__Host-') })
      }),
    },
  })
}

export type Accounts = ReturnType<typeof createAccounts>

const globalAccounts = globalThis as unknown as { __a2Accounts?: { store: Store; accounts: Accounts } }

/** The instance on the process's store; a store opened anew (after closeStore) gets a new one. */
export async function getAccounts(): Promise<Accounts> {
  const store = await getStore()
  if (globalAccounts.__a2Accounts?.store !== store) globalAccounts.__a2Accounts = { store, accounts: createAccounts(store) }
  return globalAccounts.__a2Accounts.accounts
}

export interface AccountUser {
  id: string
  email: string
  emailVerified: boolean
}

/** The signed-in account of this request, or undefined (no session cookie: no call into better-auth at all). */
export async function currentAccount(request: Request): Promise<AccountUser | undefined> {
  if (!readCookie(request, `${cookieNames().prefix}.session_token`) || !servesAccounts(request)) return undefined
  const accounts = await getAccounts()
  // better-auth resolves its base URL from the Host header; a Request made in code (the test
  // suites', a server's own) has none, only its URL.
  const headers = new Headers(request.headers)
  if (!headers.has('host')) headers.set('host', new URL(request.url).host)
  const session = await accounts.api.getSession({ headers })
  if (!session) return undefined
  return { id: session.user.id, email: session.user.email, emailVerified: session.user.emailVerified }
}
