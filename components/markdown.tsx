'use client'
import { memo } from 'react'
import { MarkdownBody } from './markdown-body'

/** An answer's Markdown rendered in the browser (streaming answers, and any the page's server did not render). */
export const Markdown = memo(MarkdownBody)
