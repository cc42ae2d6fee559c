/**
 * The chat page's first screen, read on the server with the page itself, under the owner's cookie:
 * the conversation arrives in the HTML, so a phone paints it at once and React hydrates it in
 * slices, instead of fetching it after the scripts have run and rendering every turn in one task
 * (figure 13, bench/README.md). It is the snapshot route's first screen (snapshot.ts), with the
 * same fold, window and limit on folds in flight.
 *
 * Anything but a chat this identity owns (no identity yet, another's, gone, too many folds at
 * once, a store that is down) gives undefined: the browser then asks the snapshot route, and
 * says what it answers (not found, retry), as it did before the page carried the chat.
 */
import { headers } from 'next/headers'
import { currentIdentity } from '@/lib/auth'
import { foldingSnapshot } from '@/lib/http/snapshots'
import { chatFold } from '../fold/checkpoint'
import { firstScreen, type FirstScreen } from '../fold/first-screen'
import { getChatServer } from './chat-server'
import { snapshotFold } from './snapshot'

export async function pageFirstScreen(sessionId: string): Promise<FirstScreen | undefined> {
  // The identity is read from the page request's cookies, as the API routes read it from theirs.
  const identity = await currentIdentity(new Request('http://page.invalid/', { headers: await headers() })).catch(() => undefined)
  if (!identity) return undefined
  let release: (() => void) | undefined
  try {
    release = foldingSnapshot()
    const { server } = await getChatServer()
    const folded = await server.fold(sessionId, identity.userId, chatFold, snapshotFold({ kind: 'first' }))
    const { turns, older, continues } = firstScreen(folded.state)
    return { state: { turns }, lastSeenIndex: folded.lastSeenIndex, older, continues }
  } catch {
    return undefined
  } finally {
    release?.()
  }
}
