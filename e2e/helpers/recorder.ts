/**
 * Records, from the first byte of every document, each distinct text and status every
 * answer ever showed (a MutationObserver callback runs after each DOM change, before the
 * next paint). A test then checks the whole history of what the user could have seen,
 * not a few polls of it: no duplicate chunk, no missing chunk, nothing past a cut.
 */
import type { BrowserContext, Page } from '@playwright/test'

export interface AnswerHistory {
  /** Distinct consecutive texts (trimmed innerText of answer-text), in order. */
  texts: string[]
  /** Distinct consecutive data-status values, in order. */
  statuses: string[]
}

declare global {
  interface Window {
    __a2rec?: { answers: Record<string, AnswerHistory>; order: string[] }
  }
}

function recorderScript() {
  const rec = { answers: {} as Record<string, { texts: string[]; statuses: string[] }>, order: [] as string[] }
  window.__a2rec = rec
  const scan = () => {
    for (const el of document.querySelectorAll('[data-testid="message-assistant"]')) {
      // Out of sight (a page held until it hydrates: hold-if-pending.tsx) is not something the user saw.
      if (!el.checkVisibility({ visibilityProperty: true })) continue
      const id = el.getAttribute('data-answer-id') ?? '?'
      const textEl = el.querySelector('[data-testid="answer-text"]') as HTMLElement | null
      const text = (textEl?.innerText ?? '').trim()
      const status = el.getAttribute('data-status') ?? '?'
      let entry = rec.answers[id]
      if (!entry) {
        entry = rec.answers[id] = { texts: [], statuses: [] }
        rec.order.push(id)
      }
      if (entry.texts[entry.texts.length - 1] !== text) entry.texts.push(text)
      if (entry.statuses[entry.statuses.length - 1] !== status) entry.statuses.push(status)
    }
  }
  new MutationObserver(scan).observe(document, { subtree: true, childList: true, characterData: true, attributes: true })
}

/** Installs the recorder in every page of `target` (a page or a whole context), for every later navigation. */
export async function installRecorder(target: Page | BrowserContext): Promise<void> {
  await target.addInitScript(recorderScript)
}

/** What the recorder saw in the current document, per answer id (in order of first appearance). */
export async function recorded(page: Page): Promise<{ answers: Record<string, AnswerHistory>; order: string[] }> {
  return page.evaluate(() => window.__a2rec ?? { answers: {}, order: [] })
}

export async function recordedFor(page: Page, answerId: string): Promise<AnswerHistory> {
  const all = await recorded(page)
  return all.answers[answerId] ?? { texts: [], statuses: [] }
}

/**
 * Checks `text` is a prefix, token for token, of the upstream's `tok0 tok1 …`: a
 * duplicated chunk or a missing one breaks the sequence (the upstream streams whole
 * tokens, so no word is ever partial). Returns a reason, or undefined.
 */
export function tokenSequenceProblem(text: string): string | undefined {
  const words = text.split(/\s+/).filter(Boolean)
  for (let i = 0; i < words.length; i++) {
    if (words[i] !== `tok${i}`) {
      return `word ${i} is ${JSON.stringify(words[i])}, expected "tok${i}" (…${words.slice(Math.max(0, i - 3), i + 3).join(' ')}…)`
    }
  }
  return undefined
}
