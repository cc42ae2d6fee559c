'use client'
import type { AnswerPart, ReasoningPart, ToolPart } from '@/lib/chat/fold/reducer'
import { partText, toolPhase } from '@/lib/chat/fold/parts'
import { describeToolCall, describeToolInput } from '@/lib/chat/tools/tool-call'
import { ActivityIcon, AlertIcon, CheckIcon, SpinnerIcon, StopCircleIcon } from '../icons'
import { ApprovalPanel } from './approval'

/** An answer's reasoning and tool calls, in log order, above its text. */
export function AnswerParts({ parts, ended }: { parts: readonly AnswerPart[]; ended: boolean }) {
  if (parts.length === 0) return null
  return (
    <div className="mb-3 flex flex-col gap-2">
      {parts.map((part) =>
        part.kind === 'reasoning' ? (
          <Reasoning key={`r${part.index}`} part={part} ended={ended} />
        ) : (
          <ToolCall key={`t${part.call}`} part={part} ended={ended} />
        ),
      )}
    </div>
  )
}

/** Collapsible: open while the model thinks, closed once the answer ended (a click opens it again). */
function Reasoning({ part, ended }: { part: ReasoningPart; ended: boolean }) {
  return (
    <details
      data-testid="answer-reasoning"
      open={!ended}
      className="group rounded-xl border border-neutral-200 bg-neutral-50 px-3 py-2 text-sm dark:border-neutral-800 dark:bg-neutral-900/60"
    >
      <summary className="cursor-pointer select-none text-xs font-medium text-neutral-600 dark:text-neutral-300">
        {ended ? 'Reasoning' : 'Thinking…'}
      </summary>
      <p data-testid="answer-reasoning-text" className="mt-1.5 whitespace-pre-wrap text-neutral-600 dark:text-neutral-400">
        {partText(part)}
      </p>
    </details>
  )
}

const TONES = {
  busy: 'border-neutral-200 bg-white text-neutral-700 dark:border-neutral-800 dark:bg-neutral-900 dark:text-neutral-200',
  done: 'border-emerald-200 bg-emerald-50 text-emerald-900 dark:border-emerald-900/60 dark:bg-emerald-950/40 dark:text-emerald-200',
  stopped: 'border-neutral-200 bg-neutral-50 text-neutral-700 dark:border-neutral-700 dark:bg-neutral-800/60 dark:text-neutral-200',
  failed: 'border-red-200 bg-red-50 text-red-800 dark:border-red-900/60 dark:bg-red-950/40 dark:text-red-200',
  unknown: 'border-amber-200 bg-amber-50 text-amber-900 dark:border-amber-900/60 dark:bg-amber-950/40 dark:text-amber-200',
}

function ToolCall({ part, ended }: { part: ToolPart; ended: boolean }) {
  const { label, detail, tone } = describeToolCall(part, ended)
  const input = describeToolInput(part, ended)
  const Icon =
    tone === 'busy' ? SpinnerIcon : tone === 'done' ? CheckIcon : tone === 'failed' ? AlertIcon : tone === 'unknown' ? ActivityIcon : StopCircleIcon
  return (
    <section
      data-testid="tool-call"
      data-tool={part.tool}
      data-state={toolPhase(part)}
      aria-label={`Tool call: ${part.tool}`}
      className={`rounded-xl border px-3 py-2 text-sm ${TONES[tone]}`}
    >
      <div className="flex items-center gap-2">
        <Icon className="size-3.5 shrink-0" aria-hidden="true" />
        <code className="font-mono text-xs">{part.tool}</code>
        <span data-testid="tool-call-state" className="text-xs font-medium">
          {label}
        </span>
      </div>
      {detail && <p className="mt-1 text-xs opacity-90">{detail}</p>}
      {input?.streamed === undefined && input && (
        <pre data-testid="tool-call-input" className="mt-1.5 overflow-x-auto whitespace-pre-wrap break-all font-mono text-xs opacity-80">
          {input.text}
        </pre>
      )}
      {input?.streamed !== undefined && (
        <details className="mt-1.5">
          <summary data-testid="tool-call-input" className="cursor-pointer select-none text-xs italic">
            {input.text}
          </summary>
          <pre data-testid="tool-call-input-streamed" className="mt-1 overflow-x-auto whitespace-pre-wrap break-all font-mono text-xs opacity-80">
            {input.streamed}
          </pre>
        </details>
      )}
      {!ended && <ApprovalPanel part={part} />}
      {part.state === 'done' && part.result !== undefined && (
        <details className="mt-1.5">
          <summary className="cursor-pointer select-none text-xs">Result</summary>
          <pre data-testid="tool-call-result" className="mt-1 overflow-x-auto whitespace-pre-wrap break-all font-mono text-xs opacity-80">
            {JSON.stringify(part.result, null, 2)}
          </pre>
        </details>
      )}
    </section>
  )
}
