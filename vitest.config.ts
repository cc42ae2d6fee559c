import { defineConfig } from 'vitest/config'
import { fileURLToPath } from 'node:url'

export default defineConfig({
  resolve: { alias: { '@': fileURLToPath(new URL('.', import.meta.url)) } },
  test: {
    include: ['**/*.test.ts', '**/*.test.tsx'],
    exclude: ['node_modules/**', '.next/**', '.node22/**', 'e2e/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Database files each create their own database; the multi-process files spawn
    // workers. Two cores here: more forks than that only adds contention.
    maxWorkers: 2,
    fileParallelism: true,
  },
})
