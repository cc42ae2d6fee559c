/**
 * Which Chromium the Playwright configs launch (e2e/chromium.ts launches it). In order:
 *   1. `CHROMIUM_PATH`, when set (an explicit choice wins; a path that does not exist stops the run);
 *   2. Playwright's own Chromium, when installed (`npx playwright install chromium`);
 *   3. the usual system paths (Debian's `chromium`, Ubuntu's `chromium-browser`, Google Chrome,
 *      macOS app bundles, Windows' Program Files).
 * None found: the run stops at once with the one command that installs one.
 */
import { existsSync } from 'node:fs'
import { chromium } from '@playwright/test'

const SYSTEM_PATHS: Record<string, string[]> = {
  linux: [
    '/usr/bin/chromium',
    '/usr/bin/chromium-browser',
    '/snap/bin/chromium',
    '/usr/bin/google-chrome',
    '/usr/bin/google-chrome-stable',
    '/usr/lib/chromium/chromium',
  ],
  darwin: [
    '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
    '/Applications/Chromium.app/Contents/MacOS/Chromium',
    '/opt/homebrew/bin/chromium',
  ],
  win32: ['C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe', 'C:\\Program Files (x86)\\Google\\Chrome\\Application\\chrome.exe'],
}

export const INSTALL_HINT =
  'No Chromium found for the e2e tests. Install Playwright’s own with\n\n    npx playwright install chromium\n\n' +
  '(or your distribution’s package, e.g. `sudo apt-get install chromium`), or point CHROMIUM_PATH at a Chromium or Chrome binary.'

/**
 * The executable to launch, or undefined for Playwright's own. Throws (with what to do) when
 * there is none. The arguments are for tests; the defaults read this machine.
 */
export function findChromium({
  env = process.env,
  exists = existsSync,
  playwrightPath = () => chromium.executablePath(),
  platform = process.platform,
}: {
  env?: Record<string, string | undefined>
  exists?: (path: string) => boolean
  playwrightPath?: () => string
  platform?: string
} = {}): string | undefined {
  const chosen = env.CHROMIUM_PATH?.trim()
  if (chosen) {
    if (exists(chosen)) return chosen
    throw new Error(`CHROMIUM_PATH=${chosen} does not exist.\n\n${INSTALL_HINT}`)
  }
  let own: string | undefined
  try {
    own = playwrightPath()
  } catch {
    own = undefined // this Playwright knows no Chromium build for the platform
  }
  if (own && exists(own)) return undefined
  const system = (SYSTEM_PATHS[platform] ?? SYSTEM_PATHS.linux).find((path) => exists(path))
  if (system) return system
  throw new Error(INSTALL_HINT)
}
