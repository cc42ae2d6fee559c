import type { Locator, Page } from '@playwright/test'

/**
 * The sidebar (chat list), as tests drive it: session-item (data-session-id,
 * data-generating), delete-chat, undo-toast, the "Search chats" box and search-result.
 */
export class Sidebar {
  readonly undoToast: Locator
  readonly undoButton: Locator
  readonly search: Locator
  readonly results: Locator

  constructor(readonly page: Page) {
    this.undoToast = page.getByTestId('undo-toast')
    this.undoButton = this.undoToast.getByRole('button', { name: 'Undo' })
    this.search = page.getByRole('searchbox', { name: 'Search chats' })
    this.results = page.getByTestId('search-result')
  }

  /** A chat's entry in the list. */
  item(id: string): Locator {
    return this.page.locator(`[data-testid="session-item"][data-session-id="${id}"]`)
  }

  /** Deletes a chat from its entry (the button shows on hover). */
  async deleteChat(id: string): Promise<void> {
    const row = this.page.locator('li', { has: this.item(id) })
    await row.hover()
    await row.getByTestId('delete-chat').click()
  }

  /** The ids of the search results, in order. */
  resultIds(): Promise<string[]> {
    return this.results.evaluateAll((els) => els.map((el) => el.getAttribute('data-session-id') ?? ''))
  }
}
