/** Which Chromium the e2e suites launch, on a machine that has one, another, or none. */
import { describe, expect, it } from 'vitest'
import { findChromium } from '@/e2e/find-chromium'

const OWN = '/home/me/.cache/ms-playwright/chromium-1234/chrome-linux/chrome'
const has =
  (...paths: string[]) =>
  (path: string) =>
    paths.includes(path)

describe('findChromium', () => {
  it('uses CHROMIUM_PATH when it is set and exists', () => {
    expect(findChromium({ env: { CHROMIUM_PATH: '/opt/chrome/chrome' }, exists: has('/opt/chrome/chrome', OWN), playwrightPath: () => OWN })).toBe(
      '/opt/chrome/chrome',
    )
  })

  it('stops with a clear message when CHROMIUM_PATH points nowhere', () => {
    expect(() => findChromium({ env: { CHROMIUM_PATH: '/nope/chrome' }, exists: has(OWN), playwrightPath: () => OWN })).toThrow(
      /CHROMIUM_PATH=\/nope\/chrome/,
    )
  })

  it("uses Playwright's own Chromium when it is installed", () => {
    expect(findChromium({ env: {}, exists: has(OWN, '/usr/bin/chromium'), playwrightPath: () => OWN })).toBeUndefined()
  })

  it('falls back to the usual system paths', () => {
    expect(findChromium({ env: {}, exists: has('/usr/bin/chromium'), playwrightPath: () => OWN })).toBe('/usr/bin/chromium')
    expect(
      findChromium({
        env: {},
        exists: has('/usr/bin/google-chrome'),
        playwrightPath: () => {
          throw new Error('no registry')
        },
      }),
    ).toBe('/usr/bin/google-chrome')
    expect(
      findChromium({
        env: {},
        exists: has('/Applications/Google Chrome.app/Contents/MacOS/Google Chrome'),
        playwrightPath: () => OWN,
        platform: 'darwin',
      }),
    ).toBe('/Applications/Google Chrome.app/Contents/MacOS/Google Chrome')
  })

  it('with none at all, stops with the one command that installs one', () => {
    expect(() => findChromium({ env: {}, exists: () => false, playwrightPath: () => OWN })).toThrow(/npx playwright install chromium/)
  })
})
