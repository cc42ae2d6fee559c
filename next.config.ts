import type { NextConfig } from 'next'

const nextConfig: NextConfig = {
  // PGlite must load once per process from node_modules: a bundled second copy
  // breaks `instanceof` and two instances on one data dir silently lose writes.
  serverExternalPackages: ['@electric-sql/pglite', 'postgres'],
  poweredByHeader: false,
  // Test harnesses that build side by side (e2e, chaos, bench) each use their own output directory.
  distDir: process.env.A2_NEXT_DIST_DIR || '.next',
}

export default nextConfig
