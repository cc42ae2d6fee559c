import type { Locator, Page } from '@playwright/test'

export type AnswerStatus = 'waiting' | 'streaming' | 'done' | 'stopped' | 'failed'

/**
 * The chat UI, as tests drive it. Only `data-testid`s and `data-status` are relied on:
 * composer-input, send-button, stop-button, message-user, message-assistant (data-status),
 * answer-text, stopped-marker, regenerate-button, new-chat, session-item, error-alert,
 * connection-status.
 */
export class ChatPage {
  readonly input: Locator
  readonly sendButton: Locator
  readonly stopButton: Locator
  readonly userMessages: Locator
  readonly answers: Locator
  readonly newChatButton: Locator
  readonly sessionItems: Locator
  readonly errorAlert: Locator
  readonly connectionStatus: Locator

  constructor(readonly page: Page) {
    this.input = page.getByTestId('composer-input')
    this.sendButton = page.getByTestId('send-button')
    this.stopButton = page.getByTestId('stop-button')
    this.userMessages = page.getByTestId('message-user')
    this.answers = page.getByTestId('message-assistant')
    this.newChatButton = page.getByTestId('new-chat')
    this.sessionItems = page.getByTestId('session-item')
    this.errorAlert = page.getByTestId('error-alert')
    this.connectionStatus = page.getByTestId('connection-status')
  }

  /** Opens "/" (a new chat) or a given path such as `/c/<id>`, and waits for the composer. */
  async goto(path = '/'): Promise<void> {
    await this.page.goto(path)
    await this.input.waitFor({ state: 'visible' })
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
    const before = this.page.url().includes('/c/') ? await this.userMessages.count() : 0
    await this.input.fill(text)
    await this.sendButton.click()
    if (!this.page.url().includes('/c/')) await this.page.waitForURL(/\/c\/[^/]+/)
    await this.page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="message-user"]').length > n,
      before,
    )
  }

  /** Presses Stop (the answer must be active) and waits for the button to turn back into Send. */
  async stop(): Promise<void> {
    await this.stopButton.click()
    await this.sendButton.waitFor({ state: 'visible' })
  }

  lastAnswer(): Locator {
    return this.answers.last()
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

  /** Starts a new chat from the sidebar. */
  async newChat(): Promise<void> {
    await this.newChatButton.click()
    await this.page.waitForURL((url) => url.pathname === '/')
  }
}
