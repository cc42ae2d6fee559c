import type { Metadata } from 'next'
import { RunsView } from '@/components/runs/runs-view'

export const metadata: Metadata = { title: 'Runs · a2 chat' }

/** Runs: an end user's own history, or every user's runs for an operator (with effect resolution). The API decides who is which. */
export default function RunsPage() {
  return <RunsView />
}
