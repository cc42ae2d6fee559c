'use client'
import { useEffect } from 'react'

/**
 * Sets the tab's title while mounted. Next writes the route's metadata title on navigation,
 * possibly after this effect ran, so a change to <head> puts ours back. Every page that
 * leaves the chat shell sets its own title this way too: Next may write the next page's
 * title while the shell is still mounted (the shell then puts the chat's back), so a page
 * that relied on its metadata alone could keep the chat's title (the tab-title e2e test would
 * fail about one run in ten).
 */
export function useDocumentTitle(title: string | undefined) {
  useEffect(() => {
    if (title === undefined) return
    const apply = () => {
      if (document.title !== title) document.title = title
    }
    apply()
    const observer = new MutationObserver(apply)
    observer.observe(document.head, { childList: true, subtree: true, characterData: true })
    return () => observer.disconnect()
  }, [title])
}

/** A page's tab title, for server components (see useDocumentTitle). */
export function DocumentTitle({ title }: { title: string }) {
  useDocumentTitle(title)
  return null
}
