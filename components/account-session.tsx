'use client'
import { authClient } from '@/lib/auth/client'
import { AccountLinkView } from './account-link'

/** The sidebar's account link as the session says: loaded after the page (session-list.tsx). */
export function AccountSessionLink() {
  const session = authClient.useSession()
  return <AccountLinkView email={session.data?.user.email} />
}
