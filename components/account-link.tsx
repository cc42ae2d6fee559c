'use client'
import Link from 'next/link'

/** "Sign in" for a guest; the account's email once signed in. */
export function AccountLinkView({ email }: { email?: string }) {
  return (
    <Link
      href="/account"
      prefetch={false}
      data-testid="account-link"
      className="flex items-center gap-2.5 rounded-lg px-2 py-2 text-sm text-neutral-600 hover:bg-neutral-200/70 hover:text-neutral-900 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
    >
      <span aria-hidden="true" className="inline-block size-4 text-center leading-4">
        ☺
      </span>
      <span className="truncate" data-testid="account-name">
        {email ?? 'Sign in'}
      </span>
    </Link>
  )
}
