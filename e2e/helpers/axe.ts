import AxeBuilder from '@axe-core/playwright'
import type { Page } from '@playwright/test'

/** axe-core's serious and critical violations on the page (WCAG 2.x A and AA rules, plus axe's best practices). */
export async function seriousViolations(page: Page) {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze()
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) }))
}
