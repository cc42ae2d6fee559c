'use client'
/**
 * A tool call that waits for the user's yes (lib/chat/answer/approvals.ts): where it would run
 * (its server), and Approve / Deny. Its tool and full arguments are the call's own card
 * (answer-parts.tsx). The decision is pushed from whichever tab or device decides; every tab of
 * the chat folds it, so the buttons go everywhere at once, and the call's state follows.
 */
import { createContext, useContext, useState, type ReactNode } from 'react'
import type { ToolPart } from '@/lib/chat/fold/reducer'

type Decide = (call: string, decision: 'approve' | 'deny') => Promise<unknown>

const ApprovalContext = createContext<Decide | undefined>(undefined)

/** Gives the calls of the chat below it their way to decide (use-chat.ts `decide`). */
export function ApprovalProvider({ decide, children }: { decide: Decide; children: ReactNode }) {
  return <ApprovalContext.Provider value={decide}>{children}</ApprovalContext.Provider>
}

export function ApprovalPanel({ part }: { part: ToolPart }) {
  const decide = useContext(ApprovalContext)
  const [sending, setSending] = useState(false)
  const [error, setError] = useState<string>()
  if (part.state !== 'awaiting-approval' || part.decided || !part.approval || !decide) return null
  const choose = (decision: 'approve' | 'deny') => {
    setSending(true)
    setError(undefined)
    decide(part.call, decision)
      .catch((e: unknown) => setError(e instanceof Error ? e.message : String(e)))
      .finally(() => setSending(false))
  }
  return (
    <div data-testid="tool-approval" className="mt-2 flex flex-col gap-2 border-t border-current/10 pt-2">
      <p className="text-xs">
        Runs on the server{' '}
        <code data-testid="tool-approval-server" className="font-mono">
          {part.approval.server}
        </code>{' '}
        with the arguments shown. Nothing happens until you approve.
      </p>
      <div className="flex gap-2">
        <DecisionButton decision="approve" disabled={sending} onChoose={choose} className={APPROVE_STYLE}>
          Approve
        </DecisionButton>
        <DecisionButton decision="deny" disabled={sending} onChoose={choose} className={DENY_STYLE}>
          Deny
        </DecisionButton>
      </div>
      {error && (
        <p role="alert" className="text-xs text-red-700 dark:text-red-300">
          Your decision was not recorded: {error}
        </p>
      )}
    </div>
  )
}

const BUTTON_STYLE = 'rounded-lg px-3 py-1.5 text-xs font-medium disabled:opacity-50'
const APPROVE_STYLE = `${BUTTON_STYLE} bg-neutral-900 text-white hover:bg-neutral-700 dark:bg-white dark:text-neutral-900 dark:hover:bg-neutral-200`
const DENY_STYLE = `${BUTTON_STYLE} border border-neutral-300 text-neutral-800 hover:bg-neutral-100 dark:border-neutral-600 dark:text-neutral-100 dark:hover:bg-neutral-800`

/** Approve or Deny: one button each, the same but for its decision, words and look. */
function DecisionButton({
  decision,
  disabled,
  onChoose,
  className,
  children,
}: {
  decision: 'approve' | 'deny'
  disabled: boolean
  onChoose: (decision: 'approve' | 'deny') => void
  className: string
  children: React.ReactNode
}) {
  return (
    <button type="button" data-testid={`tool-${decision}`} disabled={disabled} onClick={() => onChoose(decision)} className={className}>
      {children}
    </button>
  )
}
