import type { Metadata } from 'next'
import { RunsView } from '@/components/runs/runs-view'

export const metadata: Metadata = { title: 'Runs · a2 chat' }

/** The operator view: every run of my sessions, its state machine history and its effects. */
export default function RunsPage() {
  return <RunsView />
}
