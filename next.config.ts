import type { NextConfig } from 'next'

const nextConfig: NextConfig = {
  // PGlite must load once per process from node_modules: a bundled second copy
  // breaks `instanceof` and two instances on one data dir silently lose writes.
  serverExternalPackages: ['@electric-sql/pglite', 'postgres'],
  poweredByHeader: false,
}

export default nextConfig
