'use client'
/**
 * What an account action did, said on the page it leads to. Signing up, in or out and deleting
 * the account each end in a full load of "/" (the chat list and the page's stores start over as
 * the new identity), which would otherwise say nothing: the sentence rides across that load in
 * sessionStorage, is shown once, and stays until dismissed or the next page.
 */
import { useEffect, useState } from 'react'

const KEY = 'a2.account-notice'

/** Goes to "/" by a full load, which then says `message`. */
export function leaveWithNotice(message: string): void {
  try {
    sessionStorage.setItem(KEY, message)
  } catch {
    // Storage refused (a private window's quota): the load still happens, unannounced.
  }
  window.location.assign('/')
}

export function AccountNotice() {
  const [message, setMessage] = useState<string>()
  useEffect(() => {
    try {
      const stored = sessionStorage.getItem(KEY)
      if (stored === null) return
      sessionStorage.removeItem(KEY)
      setMessage(stored)
    } catch {
      // Nothing to say when storage cannot be read.
    }
  }, [])
  // The live region is there from the first paint, so the sentence put into it is announced.
  return (
    <div role="status" data-testid="account-notice" className="fixed inset-x-0 top-3 z-50 mx-auto w-fit max-w-[calc(100%-1.5rem)]">
      {message && (
        <div className="flex items-center gap-3 rounded-lg border border-neutral-200 bg-white px-4 py-2 text-sm shadow-md dark:border-neutral-700 dark:bg-neutral-900">
          <p>{message}</p>
          <button type="button" className="shrink-0 underline" onClick={() => setMessage(undefined)}>
            Dismiss
          </button>
        </div>
      )}
    </div>
  )
}
