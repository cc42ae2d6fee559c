// The bare page's own (empty) configuration: without one, Next takes the repository's next.config.ts.
const config = {}
export default config
