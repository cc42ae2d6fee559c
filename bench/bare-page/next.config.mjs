/* global process */
// The bare page's own configuration (without one, Next takes the repository's next.config.ts),
// with the headers every response of the app carries, Cross-Origin-Opener-Policy among them:
// the yardstick's navigation is the app's. Node 22.18 or newer loads the TypeScript file as it is.
import { commonHeaders } from '../../lib/http/security-headers.ts'

const config = {
  async headers() {
    return [{ source: '/:path*', headers: commonHeaders({ production: process.env.NODE_ENV === 'production' }) }]
  },
}
export default config
