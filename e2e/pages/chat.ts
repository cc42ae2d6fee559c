import type { Locator, Page } from '@playwright/test'
import type { AnswerStatus } from '../../lib/chat/fold/reducer'

/** The answer's `data-status`: the reducer's statuses, so the page object cannot drift from them. */
export type { AnswerStatus }

/**
 * The chat UI, as tests drive it. Only `data-testid`s and `data-status` are relied on:
 * composer-input, send-button, stop-button, message-user (message-text), message-assistant (data-status),
 * answer-text, stopped-marker (data-delivered), answer-reconnecting, regenerate-button,
 * version-switcher (version-prev, version-label, version-next), new-chat, session-item, error-alert,
 * connection-status, chat-not-found; answers are told apart by `data-answer-id`.
 */
export class ChatPage {
  readonly input: Locator
  readonly sendButton: Locator
  readonly stopButton: Locator
  readonly userMessages: Locator
  /** The text of each user message on screen (without its actions or version switcher). */
  readonly userTexts: Locator
  readonly answers: Locator
  readonly newChatButton: Locator
  readonly sessionItems: Locator
  readonly errorAlert: Locator
  readonly connectionStatus: Locator
  readonly notFound: Locator

  constructor(readonly page: Page) {
    this.input = page.getByTestId('composer-input')
    this.sendButton = page.getByTestId('send-button')
    this.stopButton = page.getByTestId('stop-button')
    this.userMessages = page.getByTestId('message-user')
    this.userTexts = page.getByTestId('message-text')
    this.answers = page.getByTestId('message-assistant')
    this.newChatButton = page.getByTestId('new-chat')
    this.sessionItems = page.getByTestId('session-item')
    this.errorAlert = page.getByTestId('error-alert')
    this.connectionStatus = page.getByTestId('connection-status')
    this.notFound = page.getByTestId('chat-not-found')
  }

  /** Opens "/" (a new chat) or a given path such as `/c/<id>`, and waits for the composer. */
  async goto(path = '/'): Promise<void> {
    await this.page.goto(path)
    await this.input.waitFor({ state: 'visible' })
  }

  /**
   * Waits until the sidebar's list has loaded: its answer carried this browser's identity
   * cookie. A request a test sends itself before then goes without one and is given an
   * identity of its own, which the list's answer then replaces in the browser (the race a
   * fresh browser's first requests can run: two answers that each minted an identity).
   */
  async waitForIdentity(): Promise<void> {
    await this.page.getByTestId('session-item').or(this.page.getByText('No chats yet')).first().waitFor()
  }

  /** The session id in the URL, once on a chat page. */
  sessionId(): string | undefined {
    return /\/c\/([^/?#]+)/.exec(this.page.url())?.[1]
  }

  /**
   * Types `text` and sends it. From "/" this creates the session and lands on `/c/<id>`.
   * Resolves once the message shows in the conversation.
   */
  async send(text: string): Promise<void> {
    // The newest message on screen changes (a count would not: a long chat shows its newest 60 turns).
    const last = () => Array.from(document.querySelectorAll('[data-testid="message-user"]')).at(-1)?.getAttribute('data-message-id') ?? null
    const before = this.page.url().includes('/c/') ? await this.page.evaluate(last) : null
    await this.input.fill(text)
    await this.sendButton.click()
    if (!this.page.url().includes('/c/')) await this.page.waitForURL(/\/c\/[^/]+/)
    await this.page
      .waitForFunction(
        (previous) =>
          (Array.from(document.querySelectorAll('[data-testid="message-user"]')).at(-1)?.getAttribute('data-message-id') ?? null) !== previous,
        before,
        // Under the test's own timeout, so what the page shows can still be read.
        { timeout: 40_000 },
      )
      .catch(async (error: Error) => {
        // A send that never showed says what the page showed instead (an alert, a not-found page), so a
        // failure far from this machine can be read from its log.
        throw new Error(`the message sent never showed; the page at ${this.page.url()} says: ${await this.whatIsShown()}`, { cause: error })
      })
  }

  /** The page's alert, not-found page and composer text, for a failure's message (never throws: the page may be gone). */
  private async whatIsShown(): Promise<string> {
    return this.page
      .evaluate(() => {
        const text = (selector: string) => document.querySelector<HTMLElement>(selector)?.innerText.trim().slice(0, 300) ?? '(none)'
        const composer = document.querySelector<HTMLTextAreaElement>('[data-testid="composer-input"]')
        return [
          `error-alert: ${text('[data-testid="error-alert"]')}`,
          `not-found: ${text('[data-testid="chat-not-found"]')}`,
          `composer: ${composer ? JSON.stringify(composer.value.slice(0, 80)) : '(none)'}`,
          `user messages: ${document.querySelectorAll('[data-testid="message-user"]').length}`,
        ].join('; ')
      })
      .catch((error: Error) => `(unreadable: ${error.message})`)
  }

  /** Presses Stop (the answer must be active) and waits for the button to turn back into Send. */
  async stop(): Promise<void> {
    await this.stopButton.click()
    await this.sendButton.waitFor({ state: 'visible' })
  }

  lastAnswer(): Locator {
    return this.answers.last()
  }

  /** The last answer's "Stopped" marker; `data-delivered="false"` while its Stop is still on its way. */
  lastStoppedMarker(): Locator {
    return this.lastAnswer().getByTestId('stopped-marker')
  }

  /** The last answer's text as rendered (Markdown rendered to text, no caret or button labels). */
  async lastAnswerText(): Promise<string> {
    return (await this.lastAnswer().getByTestId('answer-text').innerText()).trim()
  }

  async lastAnswerStatus(): Promise<AnswerStatus | null> {
    return (await this.lastAnswer().getAttribute('data-status')) as AnswerStatus | null
  }

  /** Waits until the last answer is streaming and shows at least `minChars` characters. */
  async waitForStreaming(minChars = 1, options: { timeout?: number } = {}): Promise<void> {
    await this.page.waitForFunction(
      (min) => {
        const answers = document.querySelectorAll('[data-testid="message-assistant"]')
        const last = answers[answers.length - 1]
        if (!last || last.getAttribute('data-status') !== 'streaming') return false
        const text = last.querySelector('[data-testid="answer-text"]')?.textContent ?? ''
        return text.length >= min
      },
      minChars,
      { timeout: options.timeout },
    )
  }

  /** Waits until the last answer's `data-status` is `status`. */
  async waitForStatus(status: AnswerStatus, options: { timeout?: number } = {}): Promise<void> {
    await this.page.waitForFunction(
      (expected) => {
        const answers = document.querySelectorAll('[data-testid="message-assistant"]')
        return answers[answers.length - 1]?.getAttribute('data-status') === expected
      },
      status,
      { timeout: options.timeout },
    )
  }

  /** Regenerates the last (finished or stopped) answer. */
  async regenerate(): Promise<void> {
    await this.lastAnswer().getByTestId('regenerate-button').click()
  }

  /** Picks the model that answers what is asked next (the composer's picker). */
  async pickModel(id: string): Promise<void> {
    await this.page.getByTestId('model-picker').selectOption(id)
  }

  /** Continue after Stop, on the last (stopped) answer. */
  async continueAnswer(): Promise<void> {
    await this.lastAnswer().getByTestId('continue-button').click()
  }

  /** The label of the model an answer shows it was written by. */
  async modelOf(turn: Locator): Promise<string> {
    return (await turn.getByTestId('answer-model').innerText()).trim()
  }

  /** The ‹ n/m › label of a message or answer ("2/3"), or null when it has one version. */
  async versionOf(turn: Locator): Promise<string | null> {
    const label = turn.getByTestId('version-label')
    return (await label.count()) === 0 ? null : (await label.innerText()).trim()
  }

  /** Shows the previous (older) version of a message or answer. */
  async previousVersion(turn: Locator): Promise<void> {
    await turn.getByTestId('version-prev').click()
  }

  /** Shows the next (newer) version of a message or answer. */
  async nextVersion(turn: Locator): Promise<void> {
    await turn.getByTestId('version-next').click()
  }

  /** Starts a new chat from the sidebar. */
  async newChat(): Promise<void> {
    await this.newChatButton.click()
    await this.page.waitForURL((url) => url.pathname === '/')
  }

  /** The answer with this `data-answer-id`. */
  answer(answerId: string): Locator {
    return this.page.locator(`[data-testid="message-assistant"][data-answer-id="${answerId}"]`)
  }

  /** The text an answer shows (rendered Markdown, trimmed). */
  async answerText(answerId: string): Promise<string> {
    return (await this.answer(answerId).getByTestId('answer-text').innerText()).trim()
  }

  async lastAnswerId(): Promise<string> {
    const id = await this.lastAnswer().getAttribute('data-answer-id')
    if (!id) throw new Error('the last answer has no data-answer-id')
    return id
  }

  /** Every answer in the conversation, in order: id, status and text. */
  async answersNow(): Promise<{ id: string; status: string; text: string }[]> {
    return this.page.evaluate(() =>
      [...document.querySelectorAll('[data-testid="message-assistant"]')].map((el) => ({
        id: el.getAttribute('data-answer-id') ?? '',
        status: el.getAttribute('data-status') ?? '',
        text: ((el.querySelector('[data-testid="answer-text"]') as HTMLElement | null)?.innerText ?? '').trim(),
      })),
    )
  }

  /**
   * Reads the last answer's visible text and presses Stop in the same task, so no token can
   * land between the two: what it returns is exactly what the user saw when they stopped.
   */
  async stopAndReadShown(): Promise<string> {
    return this.page.evaluate(() => {
      const answers = document.querySelectorAll('[data-testid="message-assistant"]')
      const last = answers[answers.length - 1]
      const text = ((last?.querySelector('[data-testid="answer-text"]') as HTMLElement | null)?.innerText ?? '').trim()
      const stop = document.querySelector('[data-testid="stop-button"]') as HTMLButtonElement | null
      if (!stop) throw new Error('no stop button: nothing is being written')
      stop.click()
      return text
    })
  }

  /**
   * Reads what the newest answer shows, presses Stop and reloads, all in one task (the Stop's
   * push is still on its way as the page unloads); resolves with that text once the new page loaded.
   */
  async stopAndReloadAtOnce(): Promise<string> {
    const loaded = this.page.waitForEvent('load')
    const shown = await this.page.evaluate(() => {
      const answers = document.querySelectorAll('[data-testid="message-assistant"]')
      const text = (answers[answers.length - 1].querySelector('[data-testid="answer-text"]') as HTMLElement).innerText.trim()
      ;(document.querySelector('[data-testid="stop-button"]') as HTMLButtonElement).click()
      location.reload()
      return text
    })
    await loaded
    return shown
  }

  /** Waits until the last answer shows at least `minChars` characters, whatever its status. */
  async waitForText(minChars: number, options: { timeout?: number } = {}): Promise<void> {
    await this.page.waitForFunction(
      (min) => {
        const answers = document.querySelectorAll('[data-testid="message-assistant"]')
        const el = answers[answers.length - 1]?.querySelector('[data-testid="answer-text"]') as HTMLElement | null
        return (el?.innerText.trim().length ?? 0) >= min
      },
      minChars,
      { timeout: options.timeout },
    )
  }

  /**
   * What a user watching the last answer for `forMs` sees: its text now, then every text it
   * changes to, each as the DOM mutates (a MutationObserver: no change between two looks is
   * missed, as one could be between two samples).
   */
  async watchLastAnswer(forMs: number): Promise<string[]> {
    return this.page.evaluate(async (forMs) => {
      const read = () => {
        const answers = document.querySelectorAll('[data-testid="message-assistant"]')
        const el = answers[answers.length - 1]?.querySelector('[data-testid="answer-text"]') as HTMLElement | null
        return (el?.innerText ?? '').trim()
      }
      const seen = [read()]
      const observer = new MutationObserver(() => {
        const text = read()
        if (text !== seen[seen.length - 1]) seen.push(text)
      })
      observer.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true })
      await new Promise((resolve) => setTimeout(resolve, forMs))
      observer.disconnect()
      return seen
    }, forMs)
  }
}
