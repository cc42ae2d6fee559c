'use client'
import { useSyncExternalStore } from 'react'

/** The browser's own idea of whether it is online, kept current by its online/offline events. */
function useOnline(): boolean {
  return useSyncExternalStore(
    (changed) => {
      window.addEventListener('online', changed)
      window.addEventListener('offline', changed)
      return () => {
        window.removeEventListener('online', changed)
        window.removeEventListener('offline', changed)
      }
    },
    () => navigator.onLine,
    () => true, // the server render: online, so nothing shows before hydration
  )
}

/**
 * "You're offline", above the composer while the browser says so: a message sent then is
 * retried for about 4 s (250 + 1,000 + 3,000 ms) and then handed back, so say it before.
 */
export function OfflineNotice() {
  if (useOnline()) return null
  return (
    <div className="mb-2 flex justify-center">
      <p
        data-testid="offline-status"
        role="status"
        className="inline-flex items-center gap-2 rounded-full border border-neutral-300 bg-neutral-100 px-3 py-1 text-xs font-medium text-neutral-700 dark:border-neutral-700 dark:bg-neutral-800 dark:text-neutral-200"
      >
        <span className="relative inline-flex size-2 rounded-full bg-neutral-500" aria-hidden="true" />
        You’re offline · check your connection
      </p>
    </div>
  )
}
