/**
 * How every Playwright config here launches Chromium: the one find-chromium.ts picks (a run
 * with none stops here, at config load, with the command that installs one), and the flags
 * that keep it off the network this machine may not have (without them Debian's build
 * retries refused connections to Google's hosts at every start).
 */
import { findChromium } from './find-chromium'

export const chromiumLaunchOptions = {
  executablePath: findChromium(),
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
  ],
}
