/**
 * The primary pointer is a finger (a phone, a tablet): focusing a text field there opens the
 * on-screen keyboard, which covers half the screen. Read when an action runs, not at render,
 * so a laptop with a touch screen follows whatever it is being used with (`any-pointer` would
 * call it a phone).
 */
export function touchPrimary(): boolean {
  return typeof window !== 'undefined' && typeof window.matchMedia === 'function' && window.matchMedia('(pointer: coarse)').matches
}

/** Focuses an answer's element (focusable from script only: tabIndex -1), without scrolling the reader away. */
export function focusAnswer(answerId: string | undefined): void {
  if (!answerId) return
  document.querySelector<HTMLElement>(`[data-testid="message-assistant"][data-answer-id="${CSS.escape(answerId)}"]`)?.focus({ preventScroll: true })
}

/** Focuses one of the reader's messages (tabIndex -1 too); while it is edited, its editing form's element. */
export function focusMessage(messageId: string): void {
  document.querySelector<HTMLElement>(`[data-testid="message-user"][data-message-id="${CSS.escape(messageId)}"]`)?.focus({ preventScroll: true })
}
