import type { Metadata } from 'next'
import { NotFoundView } from '@/components/not-found'

export const metadata: Metadata = { title: 'Page not found · a2 chat' }

/** Unknown routes: branded, with a way home (the shell does not wrap routes outside the chat). */
export default function NotFound() {
  return (
    <main id="main" className="flex min-h-dvh flex-col">
      <NotFoundView kind="page" />
    </main>
  )
}
