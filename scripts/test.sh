#!/usr/bin/env bash
# npm test: every layer. Unit and store tests on PGlite, and on Postgres too when
# TEST_DATABASE_URL (or DATABASE_URL) is set; then the built app in real Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
  echo "npm test needs Node.js 22 or newer (this is $(node --version)); README \"Two commands\" says how to get it." >&2
  exit 1
fi

export TEST_DATABASE_URL="${TEST_DATABASE_URL:-${DATABASE_URL:-}}"
unset DATABASE_URL # the tests create their own databases from TEST_DATABASE_URL

if [ -n "$TEST_DATABASE_URL" ]; then
  echo "== layers: PGlite and Postgres ($TEST_DATABASE_URL)"
else
  echo "== layers: PGlite only (set TEST_DATABASE_URL to add Postgres)"
fi

rm -rf reports && mkdir -p reports

# Before anything slow: the e2e tests need a Chromium (e2e/find-chromium.ts says which, or how to install one).
echo "== browser for the e2e tests"
npx tsx -e "import('./e2e/find-chromium.ts').then((m) => m.findChromium()).then((path) => console.log(path ?? 'Playwright’s own Chromium'), (e) => { console.error(e.message); process.exit(1) })"

echo "== typecheck"
npx tsc --noEmit -p .

echo "== lint (eslint.config.mjs: recommended rules, the library's doors, no import cycles)"
npx eslint .

echo '== format (.prettierrc; npm run format fixes it)'
npx prettier --check . --log-level warn

echo "== unit, store, runtime and integration tests (vitest)"
npx vitest run --reporter=default --reporter=json --outputFile.json=reports/vitest.json

echo "== build the app"
npx next build

# A failed browser test leaves the page as it was (error-context.md, its accessibility tree): printed, so a
# failure on a machine whose files are gone can still be read from the log.
print_failed_pages() {
  find test-results -name error-context.md 2>/dev/null | while read -r f; do
    echo "== page at failure: $f"
    head -c 6000 "$f"
    echo
  done
}

echo "== end to end (Playwright, real Chromium)"
if [ -n "$TEST_DATABASE_URL" ]; then
  E2E_DB="a2_e2e_$$"
  E2E_DATABASE_URL="$(npx tsx scripts/e2e-db.ts create "$E2E_DB")"
  export E2E_DATABASE_URL
  trap 'npx tsx scripts/e2e-db.ts drop "$E2E_DB" >/dev/null 2>&1 || true' EXIT
fi
PLAYWRIGHT_JSON_OUTPUT_NAME=reports/e2e.json npx playwright test --reporter=list,json || {
  status=$?
  print_failed_pages
  exit $status
}

if [ -n "$TEST_DATABASE_URL" ]; then
  echo "== chaos: app instances, workers and Postgres killed and restarted (Playwright)"
  A2_NEXT_DIST_DIR=.next PLAYWRIGHT_JSON_OUTPUT_NAME=reports/chaos.json npx playwright test -c playwright.chaos.config.ts --reporter=list,json || {
    status=$?
    print_failed_pages
    exit $status
  }
else
  echo "== chaos: skipped (needs TEST_DATABASE_URL: it runs several processes on one Postgres)"
fi

echo "== summary"
npx tsx scripts/test-summary.ts
