/**
 * What is typed in a composer and not sent, per chat ('new' for the new-chat page), in the
 * tab's sessionStorage: it survives going to another chat and back and a reload, and stays
 * in this tab (two tabs on one chat do not type into each other's box). Storage refused
 * (private mode, full): drafts are simply not kept.
 */
const KEY = (draftKey: string) => `a2-draft:${draftKey}`

export function readDraft(draftKey: string): string {
  try {
    return sessionStorage.getItem(KEY(draftKey)) ?? ''
  } catch {
    return ''
  }
}

export function writeDraft(draftKey: string, text: string): void {
  try {
    if (text.trim()) sessionStorage.setItem(KEY(draftKey), text)
    else sessionStorage.removeItem(KEY(draftKey))
  } catch {
    // Not kept: see above.
  }
}

/** The draft was sent: forget it, unless the box holds something else by now. */
export function clearDraftIf(draftKey: string, sent: string): void {
  if (readDraft(draftKey) === sent) writeDraft(draftKey, '')
}
