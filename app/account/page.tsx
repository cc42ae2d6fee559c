'use client'
/**
 * Your account: sign in or create one (the chats of this browser move into it), or, signed
 * in, who you are, whether your email is verified, your passkeys, and sign out. Each way out
 * of the page (signed up, in, out, deleted) says on the next page what happened.
 */
import Link from 'next/link'
import { useState } from 'react'
import { leaveWithNotice } from '@/components/account-notice'
import { useDocumentTitle } from '@/components/document-title'
import { authClient, authMessage, passkeyAddMessage, passkeySignInMessage } from '@/lib/auth/client'
import { MIN_PASSWORD_LENGTH } from '@/lib/auth/password-rule'

type Mode = 'sign-in' | 'sign-up' | 'forgot'

const field =
  'mt-1 block w-full rounded-lg border border-neutral-300 bg-white px-3 py-2 text-[15px] outline-none focus:border-neutral-500 dark:border-neutral-700 dark:bg-neutral-900'
const button =
  'rounded-lg bg-neutral-900 px-4 py-2 text-sm font-medium text-white hover:bg-neutral-700 disabled:opacity-50 dark:bg-neutral-100 dark:text-neutral-900 dark:hover:bg-neutral-300'

export default function AccountPage() {
  useDocumentTitle('Account · a2 chat')
  const session = authClient.useSession()
  // better-auth sets isPending again on every refresh while signed out (after each sign-in
  // attempt, failed ones too): "Loading…" only before the first answer, so the sign-in form
  // and the error it shows are not swapped out and rebuilt empty.
  const [answered, setAnswered] = useState(false)
  if (!answered && !session.isPending) setAnswered(true)
  return (
    <main id="main" className="mx-auto w-full max-w-md px-4 py-8">
      <Link href="/" className="text-sm text-neutral-500 hover:text-neutral-800 dark:hover:text-neutral-200">
        ← Back to chats
      </Link>
      <h1 className="mt-1 mb-6 text-2xl font-semibold tracking-tight">Account</h1>
      {!answered ? (
        <p className="text-sm text-neutral-500">Loading…</p>
      ) : session.data ? (
        <SignedIn email={session.data.user.email} verified={session.data.user.emailVerified} />
      ) : (
        <SignedOut />
      )}
    </main>
  )
}

function SignedIn({ email, verified }: { email: string; verified: boolean }) {
  const [note, setNote] = useState<string>()
  const [busy, setBusy] = useState(false)
  return (
    <section aria-label="Signed in" className="space-y-4">
      <p data-testid="account-email">
        Signed in as <strong>{email}</strong>
      </p>
      <p className="text-sm text-neutral-600 dark:text-neutral-400" data-testid="account-verified">
        {verified ? 'Email verified.' : 'Email not verified yet: open the link we email to this address to verify it.'}
      </p>
      {!verified && (
        <button
          type="button"
          className="text-sm underline"
          disabled={busy}
          onClick={async () => {
            setBusy(true)
            const { error } = await authClient.sendVerificationEmail({ email, callbackURL: '/account' })
            setBusy(false)
            setNote(error ? authMessage(error) : `Another link is on its way to ${email}.`)
          }}
        >
          Email me another link
        </button>
      )}
      {note && <p role="status">{note}</p>}
      <p className="text-sm text-neutral-600 dark:text-neutral-400">Your chats are listed on every device you sign in on.</p>
      <Passkeys />
      <div className="flex flex-wrap items-center gap-4">
        <button
          type="button"
          className={button}
          onClick={async () => {
            await authClient.signOut()
            // A full load: the chat list and the page's stores start over as a new guest.
            leaveWithNotice('Signed out. Your chats stay in your account; this browser starts again as a guest.')
          }}
        >
          Sign out
        </button>
        <button
          type="button"
          className="text-sm underline"
          onClick={async () => {
            // Every session of the account, this one too: a lost phone's session refuses its next request.
            await authClient.revokeSessions()
            leaveWithNotice('Signed out on every device. Your chats stay in your account.')
          }}
        >
          Sign out on all devices
        </button>
      </div>
      {/* Set apart from signing out: a slip of the finger must not land on it. */}
      <div className="mt-10 border-t border-neutral-200 pt-6 dark:border-neutral-800">
        <DeleteAccount />
      </div>
    </section>
  )
}

/** The account's passkeys by name (a lost device's can be removed), and adding one for this device (its authenticator asks first). */
function Passkeys() {
  const passkeys = authClient.useListPasskeys()
  const [note, setNote] = useState<string>()
  const list = passkeys.data ?? []
  const count = list.length
  return (
    <div className="space-y-2">
      <p className="text-sm" data-testid="passkey-count">
        {count === 0 ? 'No passkeys yet.' : count === 1 ? '1 passkey.' : `${count} passkeys.`}
      </p>
      {count > 0 && (
        <ul aria-label="Passkeys" className="space-y-1">
          {list.map((passkey) => (
            <li key={passkey.id} data-testid="passkey" className="flex items-center gap-3 text-sm">
              <span className="min-w-0 flex-1 truncate">
                {passkey.name || 'Unnamed passkey'}
                <span className="text-neutral-500 dark:text-neutral-400"> · added {new Date(passkey.createdAt).toLocaleDateString()}</span>
              </span>
              <button
                type="button"
                className="text-sm underline"
                aria-label={`Remove the passkey ${passkey.name || 'Unnamed passkey'}`}
                onClick={async () => {
                  setNote(undefined)
                  const { error } = await authClient.passkey.deletePasskey({ id: passkey.id })
                  setNote(error ? authMessage(error) : `Passkey “${passkey.name || 'Unnamed passkey'}” removed: it signs in to this account no more.`)
                }}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <button
        type="button"
        className="text-sm underline"
        onClick={async () => {
          setNote(undefined)
          const result = await authClient.passkey.addPasskey({ name: deviceName() })
          if (result?.error) setNote(passkeyAddMessage(result.error))
          else setNote('Passkey added: you can sign in with it on this device.')
        }}
      >
        Add a passkey
      </button>
      {note && <p role="status">{note}</p>}
    </div>
  )
}

/** What the passkey list calls this device: its browser and system, as the browser reports them. */
function deviceName(): string {
  const brands = (navigator as Navigator & { userAgentData?: { brands: Array<{ brand: string }>; platform: string } }).userAgentData
  const browser = brands?.brands.map((b) => b.brand).find((b) => !/not.?a.?brand|chromium/i.test(b)) ?? brands?.brands[0]?.brand
  const system = brands?.platform || navigator.platform
  return [browser, system].filter(Boolean).join(' on ') || 'This device'
}

/** Deleting the account: every chat and every row of it goes, after a second press that says so. */
function DeleteAccount() {
  const [asking, setAsking] = useState(false)
  const [error, setError] = useState<string>()
  if (!asking)
    return (
      <button type="button" className="text-sm text-red-700 underline dark:text-red-400" onClick={() => setAsking(true)}>
        Delete account…
      </button>
    )
  return (
    <div role="group" aria-label="Delete account" className="space-y-2 rounded-lg border border-red-300 p-3 dark:border-red-800">
      <p className="text-sm">This deletes the account and every chat in it, on every device. It cannot be undone.</p>
      <div className="flex gap-2">
        <button
          type="button"
          className="rounded-lg bg-red-700 px-3 py-1.5 text-sm font-medium text-white"
          onClick={async () => {
            const { error: failed } = await authClient.deleteUser()
            if (failed) return setError(authMessage(failed))
            leaveWithNotice('Account deleted, with every chat in it. This browser starts again as a guest.')
          }}
        >
          Delete the account
        </button>
        <button type="button" className="text-sm underline" onClick={() => setAsking(false)}>
          Keep it
        </button>
      </div>
      {error && (
        <p role="alert" className="text-sm text-red-700 dark:text-red-400">
          {error}
        </p>
      )}
    </div>
  )
}

function SignedOut() {
  const [mode, setMode] = useState<Mode>('sign-in')
  const [error, setError] = useState<string>()
  const [note, setNote] = useState<string>()
  const [busy, setBusy] = useState(false)

  async function submit(form: FormData) {
    setBusy(true)
    setError(undefined)
    setNote(undefined)
    const email = String(form.get('email') ?? '')
    const password = String(form.get('password') ?? '')
    // A sign-up signs nobody in (it answers alike for a taken email): signing in follows it.
    const signedUp =
      mode === 'sign-up' ? await authClient.signUp.email({ email, password, name: String(form.get('name') ?? '') || email.split('@')[0] }) : undefined
    const result = signedUp?.error
      ? signedUp
      : mode === 'forgot'
        ? await authClient.requestPasswordReset({ email, redirectTo: '/account/reset' })
        : await authClient.signIn.email({ email, password })
    setBusy(false)
    if (result.error) return setError(authMessage(result.error))
    if (mode === 'forgot') return setNote('If an account has this email, a link to set a new password is on its way to it.')
    // A full load: the chat list, now the account's, is fetched anew.
    leaveWithNotice(
      mode === 'sign-up'
        ? `Account created: you are signed in as ${email}. The chats of this browser are in it.`
        : `Signed in as ${email}. The chats of this browser are in your account too.`,
    )
  }

  const tab = (to: Mode, label: string) => (
    <button
      type="button"
      role="tab"
      aria-selected={mode === to}
      onClick={() => {
        setMode(to)
        setError(undefined)
        setNote(undefined)
      }}
      className={`rounded-lg px-3 py-1.5 text-sm ${mode === to ? 'bg-neutral-200 font-medium dark:bg-neutral-800' : 'text-neutral-600 dark:text-neutral-400'}`}
    >
      {label}
    </button>
  )

  return (
    <section aria-label="Sign in or create an account">
      <div role="tablist" aria-label="Account" className="mb-4 flex gap-1">
        {tab('sign-in', 'Sign in')}
        {tab('sign-up', 'Create account')}
      </div>
      <p className="mb-4 text-sm text-neutral-600 dark:text-neutral-400">
        {mode === 'forgot'
          ? 'We will email you a link to set a new password.'
          : 'The chats you made in this browser move into the account, and follow you to every device you sign in on.'}
      </p>
      {mode === 'sign-in' && (
        <button
          type="button"
          className={`${button} mb-4 w-full`}
          disabled={busy}
          onClick={async () => {
            setBusy(true)
            setError(undefined)
            const result = await authClient.signIn.passkey()
            setBusy(false)
            if (result.error) return setError(passkeySignInMessage(result.error))
            leaveWithNotice(`Signed in with your passkey as ${result.data?.user?.email ?? 'your account'}.`)
          }}
        >
          Sign in with a passkey
        </button>
      )}
      <form
        className="space-y-3"
        onSubmit={(e) => {
          e.preventDefault()
          void submit(new FormData(e.currentTarget))
        }}
      >
        {mode === 'sign-up' && (
          <label className="block text-sm">
            Name
            <input name="name" autoComplete="name" className={field} />
          </label>
        )}
        <label className="block text-sm">
          Email
          <input name="email" type="email" required autoComplete="email" className={field} />
        </label>
        {mode !== 'forgot' && (
          <label className="block text-sm">
            Password
            <input
              name="password"
              type="password"
              required
              minLength={mode === 'sign-up' ? MIN_PASSWORD_LENGTH : undefined}
              aria-describedby={mode === 'sign-up' ? 'password-rule' : undefined}
              autoComplete={mode === 'sign-up' ? 'new-password' : 'current-password'}
              className={field}
            />
          </label>
        )}
        {mode === 'sign-up' && (
          <p id="password-rule" className="text-sm text-neutral-600 dark:text-neutral-400">
            At least {MIN_PASSWORD_LENGTH} characters. A few words you will remember make a good one.
          </p>
        )}
        {error && (
          <p role="alert" className="text-sm text-red-700 dark:text-red-400">
            {error}
          </p>
        )}
        {note && <p role="status">{note}</p>}
        <div className="flex items-center gap-4">
          <button type="submit" className={button} disabled={busy}>
            {mode === 'sign-up' ? 'Create account' : mode === 'sign-in' ? 'Sign in' : 'Email me a link'}
          </button>
          {mode === 'sign-in' && (
            <button type="button" className="text-sm underline" onClick={() => setMode('forgot')}>
              Forgot password?
            </button>
          )}
        </div>
      </form>
    </section>
  )
}
