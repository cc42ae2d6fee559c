import type { NextConfig } from 'next'

const nextConfig: NextConfig = {
  // PGlite must load once per process from node_modules: a bundled second copy
  // breaks `instanceof` and two instances on one data dir silently lose writes.
  serverExternalPackages: ['@electric-sql/pglite', 'postgres'],
  poweredByHeader: false,
  // `npm run dev` opened at 127.0.0.1 rather than localhost: Next blocks dev resources for other origins.
  allowedDevOrigins: ['127.0.0.1'],
  // Test harnesses that build side by side (e2e, chaos, bench) each use their own output directory.
  distDir: process.env.A2_NEXT_DIST_DIR || '.next',
}

export default nextConfig
