/**
 * The steps one answer streams into the log, of every kind: text (`chunk`), reasoning, a tool
 * call's input as it streams, and the complete call. They go through one writer
 * (chunk-writer.ts) in the order the model sent them, so a Stop's `lastSeenIndex` is one point
 * in one ordered stream whatever kinds lie on either side of it.
 */
import type { EventOf } from '@/lib/a2'
import { MAX_DELTA_CHARS, type Chat } from '../contract'
import type { ToolApproval } from '../fold/parts'
import { joinDeltas } from './chunk-writer'
import type { Usage } from '@/lib/ai/usage'

export type AnswerStep =
  | { type: 'chunk'; delta: string }
  | { type: 'reasoning'; delta: string }
  | { type: 'tool.input'; call: string; tool: string; delta: string }
  | { type: 'tool.call'; call: string; tool: string; input: unknown }
  /** A call that waits for approval: a `tool.state` in `awaiting-approval`, the one state that is a step (answer/approvals.ts). */
  | { type: 'tool.wait'; call: string; tool: string; input: unknown; approval: ToolApproval; usage?: Usage }

type StepType = Exclude<AnswerStep['type'], 'tool.wait'> | 'tool.state'
type Appendable = { [K in StepType]: { type: K; payload: EventOf<Chat, K>['payload'] } }[StepType]

/**
 * One append's steps as the events it writes, in order: neighbours of one kind (and one tool
 * call) joined into as few events as the contract's delta bound allows, as joinDeltas joins text.
 */
export function stepEvents(steps: readonly AnswerStep[], of: string, attempt: number, stepRun?: string): Appendable[] {
  const events: Appendable[] = []
  let run: AnswerStep[] = []
  // A continuation's steps name its run (contract.ts `run`): its Stop refuses them.
  const runOf = stepRun === undefined ? {} : { run: stepRun }
  const close = () => {
    const first = run[0]
    if (!first) return
    if (first.type === 'tool.call')
      events.push({ type: first.type, payload: { of, attempt, ...runOf, call: first.call, tool: first.tool, input: first.input } })
    else if (first.type === 'tool.wait')
      events.push({
        type: 'tool.state',
        payload: {
          of,
          ...runOf,
          call: first.call,
          tool: first.tool,
          state: 'awaiting-approval',
          input: first.input,
          approval: first.approval,
          ...(first.usage && { usage: first.usage }),
        },
      })
    else {
      for (const delta of joinDeltas(
        run.map((step) => (step as { delta: string }).delta),
        MAX_DELTA_CHARS,
      )) {
        events.push(
          first.type === 'tool.input'
            ? { type: first.type, payload: { of, attempt, ...runOf, call: first.call, tool: first.tool, delta } }
            : { type: first.type, payload: { of, attempt, ...runOf, delta } },
        )
      }
    }
    run = []
  }
  for (const step of steps) {
    if (!joinsWith(run.at(-1), step)) close()
    run.push(step)
  }
  close()
  return events
}

/** Two neighbouring steps that one event can carry: deltas of one kind, and of one call for tool input. */
function joinsWith(previous: AnswerStep | undefined, step: AnswerStep): boolean {
  if (!previous || previous.type !== step.type || step.type === 'tool.call' || step.type === 'tool.wait') return false
  return step.type !== 'tool.input' || (previous as { call: string }).call === step.call
}
