'use client'
/**
 * Your account: sign in or create one (the chats of this browser move into it), or, signed
 * in, who you are, whether your email is verified, and sign out. Mail is queued in the app's
 * outbox (no mail server ships), and the page says queued, never sent.
 */
import Link from 'next/link'
import { useState } from 'react'
import { useDocumentTitle } from '@/components/document-title'
import { authClient, authMessage } from '@/lib/auth/client'

type Mode = 'sign-in' | 'sign-up' | 'forgot'

const field =
  'mt-1 block w-full rounded-lg border border-neutral-300 bg-white px-3 py-2 text-[15px] outline-none focus:border-neutral-500 dark:border-neutral-700 dark:bg-neutral-900'
const button =
  'rounded-lg bg-neutral-900 px-4 py-2 text-sm font-medium text-white hover:bg-neutral-700 disabled:opacity-50 dark:bg-neutral-100 dark:text-neutral-900 dark:hover:bg-neutral-300'

export default function AccountPage() {
  useDocumentTitle('Account · a2 chat')
  const session = authClient.useSession()
  return (
    <main id="main" className="mx-auto w-full max-w-md px-4 py-8">
      <Link href="/" className="text-sm text-neutral-500 hover:text-neutral-800 dark:hover:text-neutral-200">
        ← Back to chats
      </Link>
      <h1 className="mt-1 mb-6 text-2xl font-semibold tracking-tight">Account</h1>
      {session.isPending ? (
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
        {verified ? 'Email verified.' : 'Email not verified yet: the link to verify it was queued in the mail outbox.'}
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
            setNote(error ? authMessage(error) : 'Another link was queued.')
          }}
        >
          Queue another verification link
        </button>
      )}
      {note && <p role="status">{note}</p>}
      <p className="text-sm text-neutral-600 dark:text-neutral-400">Your chats are listed on every device you sign in on.</p>
      <Passkeys />
      <DeleteAccount />
      <button
        type="button"
        className={button}
        onClick={async () => {
          await authClient.signOut()
          // A full load: the chat list and the page's stores start over as a new guest.
          window.location.assign('/')
        }}
      >
        Sign out
      </button>
      <button
        type="button"
        className="ml-3 text-sm underline"
        onClick={async () => {
          // Every session of the account, this one too: a lost phone's session refuses its next request.
          await authClient.revokeSessions()
          window.location.assign('/')
        }}
      >
        Sign out on all devices
      </button>
    </section>
  )
}

/** The account's passkeys, and adding one for this device (its authenticator asks first). */
function Passkeys() {
  const passkeys = authClient.useListPasskeys()
  const [note, setNote] = useState<string>()
  const count = passkeys.data?.length ?? 0
  return (
    <div className="space-y-2">
      <p className="text-sm" data-testid="passkey-count">
        {count === 0 ? 'No passkeys yet.' : count === 1 ? '1 passkey.' : `${count} passkeys.`}
      </p>
      <button
        type="button"
        className="text-sm underline"
        onClick={async () => {
          setNote(undefined)
          const result = await authClient.passkey.addPasskey({ name: navigator.platform || 'This device' })
          if (result?.error) setNote(authMessage(result.error))
          else setNote('Passkey added: you can sign in with it on this device.')
        }}
      >
        Add a passkey
      </button>
      {note && <p role="status">{note}</p>}
    </div>
  )
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
            window.location.assign('/')
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
    if (mode === 'forgot') return setNote('If an account has this email, a link to reset its password was queued in the mail outbox.')
    // A full load: the chat list, now the account's, is fetched anew.
    window.location.assign('/')
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
          ? 'We will queue a link to set a new password.'
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
            if (result.error) return setError(authMessage(result.error))
            window.location.assign('/')
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
              minLength={mode === 'sign-up' ? 10 : undefined}
              autoComplete={mode === 'sign-up' ? 'new-password' : 'current-password'}
              className={field}
            />
          </label>
        )}
        {error && (
          <p role="alert" className="text-sm text-red-700 dark:text-red-400">
            {error}
          </p>
        )}
        {note && <p role="status">{note}</p>}
        <div className="flex items-center gap-4">
          <button type="submit" className={button} disabled={busy}>
            {mode === 'sign-up' ? 'Create account' : mode === 'sign-in' ? 'Sign in' : 'Queue a reset link'}
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
