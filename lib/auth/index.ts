/**
 * Who a request is: a signed-in account (accounts.ts), else a guest (guest.ts), else nobody.
 * The rest of the app sees a user id either way; an account's id owns its chats on every
 * device it signs in on.
 */
import { currentAccount, type AccountUser } from './accounts'
import { currentUser as currentGuest, newIdentity } from './guest'

export { newIdentity }
export type { AccountUser }

export interface Identity {
  userId: string
  /** A Set-Cookie header to send when the identity was just created. */
  setCookie?: string
  /** Set when the user is signed in to an account. */
  account?: AccountUser
}

export async function currentIdentity(request: Request): Promise<Identity | undefined> {
  const account = await currentAccount(request)
  if (account) return { userId: account.id, account }
  const guest = currentGuest(request)
  return guest ? { userId: guest } : undefined
}
