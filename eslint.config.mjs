// ESLint (flat config): the recommended rules, plus the few that keep the layers apart.
//
// Layers, and who may import what:
// - lib/a2 is the library. Its own code imports nothing of the app (db/, lib/store, lib/chat, lib/ai, lib/http, app/,
//   components/, …): a forker copies lib/a2 alone. Its tests may use the shared test helpers in test/.
// - Outside lib/a2, nothing imports lib/a2/internal: the doors are @/lib/a2, @/lib/a2/server, @/lib/a2/react
//   (and @/lib/a2/testing, for tests only).
// - db/ is the app's tables and their migrations: it imports only packages, so lib/ (lib/store opens the
//   database and migrates it) points down at it and nothing in db/ points back.
// - lib/ is the ground floor: its code imports nothing from the folders above it (app/, components/, scripts/,
//   bench/, e2e/, test/), so every arrow between top-level folders points down.
// - Tooling that measures or drives the library's internals on purpose may reach them: test/ (the test
//   helpers shared by every suite) and bench/ (benchmarks of internal queries). scripts/ is
//   app entry points and tools (the worker, the upstream stand-in), held to the app's rule.
// - lib/chat stands in floors by concern (contract.ts ← fold/ ← tools/ ← answer/ ← server/, and browser/ on the
//   fold): no import runs back up.
// - No import cycles anywhere (import-x/no-cycle, resolving the @/ alias through tsconfig).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import { importX } from 'eslint-plugin-import-x'
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript'
import reactHooks from 'eslint-plugin-react-hooks'

/** `@/lib/a2/internal/x`, `../../lib/a2/test-kit/x`: any path into the library's internals or its own test kit. */
const INTERNALS = {
  regex: '(^|/)a2/(internal|test-kit)(/|$)',
  message: 'Import the library through its doors: @/lib/a2, @/lib/a2/server, @/lib/a2/react (@/lib/a2/testing in tests).',
}
/** The test kit: for tests, never for code that ships. */
const TESTING = { regex: '(^|/)a2/testing$', message: '@/lib/a2/testing is for tests only.' }
const TESTS = ['**/*.test.{ts,tsx}', 'e2e/**']

/** lib/ is what app/, components/ and the tools stand on: its code never imports them back. */
const GROUND_FLOOR = {
  target: './lib',
  from: ['./app', './components', './scripts', './bench', './e2e', './test'],
  message: 'lib/ is the ground floor: it imports nothing from the folders that stand on it.',
}

/** lib/chat's floors, lowest first: each may import those below it, none above. */
const CHAT = ['contract.ts', 'fold', 'tools', 'answer', 'server'].map((floor) => `./lib/chat/${floor}`)
const CHAT_FLOORS = [
  ...CHAT.slice(0, -1).map((target, i) => ({
    target,
    from: [...CHAT.slice(i + 1), './lib/chat/browser'],
    message: 'lib/chat stands in floors: contract.ts ← fold/ ← tools/ ← answer/ ← server/; a floor imports none above it.',
  })),
  { target: './lib/chat/server', from: './lib/chat/browser', message: 'The server imports nothing of the browser hook.' },
  {
    target: './lib/chat/browser',
    from: ['./lib/chat/tools', './lib/chat/answer', './lib/chat/server'],
    message: 'The browser hook stands on the contract and the fold only (the rest is server code).',
  },
]

export default tseslint.config(
  {
    // A disable comment that silences nothing is stale: fail, so it is removed or made real.
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  {
    ignores: [
      'node_modules/',
      '.node22/',
      '.next/',
      '.next-*/',
      'bench/bare-page/.next/',
      '.data/',
      'reports/',
      'test-results/',
      'playwright-report/',
      'next-env.d.ts',
      'bench/results/',
      'docs/',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    plugins: { 'import-x': importX, 'react-hooks': reactHooks },
    settings: {
      // Without these import-x skips .ts dependencies, and no-cycle sees no graph at all.
      'import-x/extensions': ['.ts', '.tsx', '.mts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx', '.mts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // The two classic hook rules only: v7's compiler-era rules are a larger migration than this config's job.
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
      // `_`-prefixed names are unused on purpose (a parameter a signature needs, a rest sibling dropped).
      // A closure that reads a variable assigned after it is built (a test's handler calling the `cancel` that
      // setup() returns) needs `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Tooling parses JSON and IPC messages of no declared shape (child processes, upstream request bodies,
    // raw rows): `any` is the honest type there. The library and the app are held to the rule.
    files: ['bench/**', 'test/**', 'e2e/**', 'scripts/**', 'lib/a2/test-kit/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The app and its entry points: only the library's doors.
    files: ['**/*.{ts,tsx,mjs,js}'],
    ignores: ['lib/a2/**', 'test/**', 'bench/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [INTERNALS, TESTING] }],
    },
  },
  {
    files: TESTS,
    ignores: ['lib/a2/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [INTERNALS] }],
    },
  },
  {
    // lib/ is what app/, components/ and the tools stand on: its code never imports them back.
    files: ['lib/**/*.{ts,tsx}'],
    ignores: ['lib/**/*.test.{ts,tsx}'],
    rules: {
      'import-x/no-restricted-paths': ['error', { zones: [GROUND_FLOOR] }],
    },
  },
  {
    // lib/chat, the app's side, in floors by concern; its code imports only the floors below it (a test may stand
    // on several, as the scenario suites drive the whole chat server):
    //   contract.ts (the events) ← fold/ (the reducer and its storage) ← tools/ (a tool call's life) ← answer/ (the
    //   generate consumer) ← server/ (the chat's server, the routes' services); browser/ (the hook) stands on fold/.
    files: ['lib/chat/**/*.{ts,tsx}'],
    ignores: ['lib/chat/**/*.test.{ts,tsx}'],
    rules: {
      'import-x/no-restricted-paths': ['error', { zones: [GROUND_FLOOR, ...CHAT_FLOORS] }],
    },
  },
  {
    // The library, its tests and its test kit import nothing outside lib/a2 but packages (a forker copies it alone).
    files: ['lib/a2/**/*.{ts,tsx}'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            {
              target: './lib/a2',
              from: './',
              except: ['./lib/a2', './node_modules'],
              message: 'lib/a2 is the library: it imports nothing of the app (a forker copies it alone).',
            },
          ],
        },
      ],
    },
  },
  {
    // The app's tables: drizzle and nothing of the project, so every arrow into db/ points down.
    files: ['db/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            {
              target: './db',
              from: './',
              except: ['./db', './node_modules'],
              message: "db/ holds the app's tables and migrations: it imports only packages.",
            },
          ],
        },
      ],
    },
  },
)
