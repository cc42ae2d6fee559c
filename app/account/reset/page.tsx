'use client'
/** The page a reset link lands on (/account/reset?token=…): a new password for the account. */
import Link from 'next/link'
import { useSearchParams } from 'next/navigation'
import { Suspense, useState } from 'react'
import { useDocumentTitle } from '@/components/document-title'
import { authClient, authMessage } from '@/lib/auth/client'
import { MIN_PASSWORD_LENGTH } from '@/lib/auth/password-rule'

export default function ResetPage() {
  useDocumentTitle('Reset password · a2 chat')
  return (
    <main id="main" className="mx-auto w-full max-w-md px-4 py-8">
      <Link href="/account" className="text-sm text-neutral-500 hover:text-neutral-800 dark:hover:text-neutral-200">
        ← Account
      </Link>
      <h1 className="mt-1 mb-6 text-2xl font-semibold tracking-tight">Set a new password</h1>
      <Suspense>
        <ResetForm />
      </Suspense>
    </main>
  )
}

function ResetForm() {
  const token = useSearchParams().get('token')
  const linkError = useSearchParams().get('error')
  const [error, setError] = useState<string>()
  const [done, setDone] = useState(false)
  if (!token || linkError) return <p role="alert">This reset link is not valid any more. Ask for a new one on the Account page.</p>
  if (done)
    return (
      <p role="status">
        Your password is set. <Link href="/account">Sign in</Link> with it.
      </p>
    )
  return (
    <form
      className="space-y-3"
      onSubmit={async (e) => {
        e.preventDefault()
        const newPassword = String(new FormData(e.currentTarget).get('password') ?? '')
        const { error: failed } = await authClient.resetPassword({ newPassword, token })
        if (failed) setError(authMessage(failed))
        else setDone(true)
      }}
    >
      <label className="block text-sm">
        New password
        <input
          name="password"
          type="password"
          required
          minLength={MIN_PASSWORD_LENGTH}
          aria-describedby="password-rule"
          autoComplete="new-password"
          className="mt-1 block w-full rounded-lg border border-neutral-300 bg-white px-3 py-2 dark:border-neutral-700 dark:bg-neutral-900"
        />
      </label>
      <p id="password-rule" className="text-sm text-neutral-600 dark:text-neutral-400">
        At least {MIN_PASSWORD_LENGTH} characters.
      </p>
      {error && (
        <p role="alert" className="text-sm text-red-700 dark:text-red-400">
          {error}
        </p>
      )}
      <button type="submit" className="rounded-lg bg-neutral-900 px-4 py-2 text-sm font-medium text-white dark:bg-neutral-100 dark:text-neutral-900">
        Set password
      </button>
    </form>
  )
}
