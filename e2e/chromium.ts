/**
 * How every Playwright config here launches Debian's Chromium: no browser download, and
 * the flags that keep it off the network this machine does not have (without them it
 * retries refused connections to Google's hosts at every start).
 */
export const chromiumLaunchOptions = {
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
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
