/**
 * The one rule a chosen password meets, shared by the server (better-auth's minPasswordLength)
 * and the pages that say it before the browser complains. NIST SP 800-63B's floor for a
 * memorized secret chosen by the user is 8; 10 with no composition rules.
 */
export const MIN_PASSWORD_LENGTH = 10
