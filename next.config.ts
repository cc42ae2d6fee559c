import type { NextConfig } from 'next'
import { API_CSP, commonHeaders } from './lib/http/security-headers'

const nextConfig: NextConfig = {
  // PGlite must load once per process from node_modules: a bundled second copy
  // breaks `instanceof` and two instances on one data dir silently lose writes.
  // The database drivers and drizzle-orm load from node_modules too: one copy per process,
  // shared by lib/a2 and the app's routes.
  serverExternalPackages: ['@electric-sql/pglite', 'postgres', 'drizzle-orm'],
  poweredByHeader: false,
  // `npm run dev` opened at 127.0.0.1 rather than localhost: Next blocks dev resources for other origins.
  allowedDevOrigins: ['127.0.0.1'],
  // Test harnesses that build side by side (e2e, chaos, bench) each use their own output directory.
  distDir: process.env.A2_NEXT_DIST_DIR || '.next',
  async headers() {
    const common = commonHeaders({ production: process.env.NODE_ENV === 'production' })
    return [
      { source: '/:path*', headers: common },
      // Pages get a CSP with a nonce from proxy.ts; API answers this one.
      { source: '/api/:path*', headers: [{ key: 'Content-Security-Policy', value: API_CSP }] },
    ]
  },
}

export default nextConfig
