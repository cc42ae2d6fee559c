'use client'
import { CheckIcon, CopyIcon } from './icons'
import { useCopy } from './chat/copy-button'

/** A fenced code block of an answer, with its language and a Copy button (the page's one island inside a finished answer). */
export function CodeBlock({ language, text, children }: { language?: string; text: string; children: React.ReactNode }) {
  const { copied, copy } = useCopy(text)

  return (
    <div className="code-block overflow-hidden rounded-xl border border-neutral-200 bg-neutral-50 dark:border-neutral-700/70 dark:bg-neutral-950">
      <div className="flex items-center justify-between border-b border-neutral-200 bg-neutral-100/80 py-1 pr-1.5 pl-3.5 text-xs text-neutral-500 dark:border-neutral-700/70 dark:bg-neutral-800/60 dark:text-neutral-400">
        <span data-lang={language || 'code'} className="font-mono" aria-hidden="true" />
        <button
          type="button"
          onClick={() => void copy()}
          aria-label={copied ? 'Copied' : 'Copy code'}
          data-label={copied ? 'Copied' : 'Copy'}
          className="inline-flex items-center gap-1.5 rounded-md px-2 py-1 font-sans text-xs hover:bg-neutral-200 hover:text-neutral-900 dark:hover:bg-neutral-700 dark:hover:text-neutral-100"
        >
          {copied ? <CheckIcon className="size-3.5" /> : <CopyIcon className="size-3.5" />}
        </button>
      </div>
      <pre className="overflow-x-auto px-4 py-3 font-mono text-[13px] leading-6 text-neutral-800 dark:text-neutral-200">{children}</pre>
    </div>
  )
}
