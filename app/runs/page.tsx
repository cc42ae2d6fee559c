import type { Metadata } from 'next'
import { RunsView } from '@/components/runs/runs-view'
import { DocumentTitle } from '@/components/document-title'

const TITLE = 'Runs · a2 chat'

export const metadata: Metadata = { title: TITLE }

/** Runs: an end user's own history, or every user's runs for an operator (with effect resolution). The API decides who is which. */
export default function RunsPage() {
  return (
    <>
      <DocumentTitle title={TITLE} />
      <RunsView />
    </>
  )
}
