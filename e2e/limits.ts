/**
 * The app's limits in the browser suites (main and chaos). Everything comes from one address,
 * 127.0.0.1, which makes every identity and push: these sit far above the suites' use.
 */
export const E2E_LIMITS = {
  A2_RATE_PUSHES_PER_MIN: '600',
  A2_RATE_GENERATIONS_PER_MIN: '200',
  A2_RATE_IDENTITIES_PER_MIN_PER_ADDRESS: '10000',
  // The account specs sign up and in many times a minute, all from 127.0.0.1 (at 10 the attachments spec was refused).
  A2_RATE_ACCOUNT_ATTEMPTS_PER_MIN_PER_ADDRESS: '1000',
  A2_RATE_PUSHES_PER_MIN_PER_ADDRESS: '10000',
  A2_RATE_GENERATIONS_PER_MIN_PER_ADDRESS: '10000',
  A2_MAX_RUNNING_GENERATIONS_PER_USER: '64',
  A2_MAX_RUNNING_GENERATIONS: '1000',
  A2_MAX_TAILS_PER_USER: '64',
  /** The suite's operator (`/runs` across users, resolving effects); end users are still refused. */
  A2_OPERATOR_TOKEN: 'e2e-operator-token-0123456789abcdef0123',
}
