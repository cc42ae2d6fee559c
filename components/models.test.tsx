/** The model the page asks for: the stored pick while the server offers it, else the default; the picker lists them by label. */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { renderToStaticMarkup } from 'react-dom/server'
import { chosenModel, ModelsProvider } from './models'
import { ModelPicker } from './chat/model-picker'

const MODELS = [
  { id: 'offline', label: 'Offline', reasoning: false, tools: true },
  { id: 'offline-brief', label: 'Offline, brief', reasoning: false, tools: true },
]

function storageHolding(value: string | null) {
  vi.stubGlobal('localStorage', { getItem: () => value, setItem: () => {} })
}

afterEach(() => vi.unstubAllGlobals())

describe('the model the page asks for', () => {
  it('is the stored pick when the server offers it', () => {
    storageHolding('offline-brief')
    expect(chosenModel(MODELS)).toBe('offline-brief')
  })

  it('is the default (the first) when nothing is stored, or the stored id is no longer offered', () => {
    storageHolding(null)
    expect(chosenModel(MODELS)).toBe('offline')
    storageHolding('gpt-4o-removed')
    expect(chosenModel(MODELS)).toBe('offline')
  })

  it('is the default when storage refuses to be read (a private window)', () => {
    vi.stubGlobal('localStorage', {
      getItem: () => {
        throw new Error('SecurityError')
      },
    })
    expect(chosenModel(MODELS)).toBe('offline')
  })

  it('is left to the server (none named) when the page was told no models', () => {
    storageHolding('offline')
    expect(chosenModel([])).toBeUndefined()
  })
})

describe('the picker', () => {
  it('lists every offered model by its label, the default chosen before the browser has read its pick', () => {
    const html = renderToStaticMarkup(
      <ModelsProvider models={MODELS}>
        <ModelPicker />
      </ModelsProvider>,
    )
    expect(html).toContain('data-testid="model-picker"')
    expect([...html.matchAll(/<option value="([^"]+)"[^>]*>([^<]+)</g)].map((m) => [m[1], m[2]])).toEqual([
      ['offline', 'Offline'],
      ['offline-brief', 'Offline, brief'],
    ])
    expect(html).toMatch(/<option value="offline" selected/)
  })

  it('shows nothing with one model: there is nothing to pick', () => {
    const html = renderToStaticMarkup(
      <ModelsProvider models={MODELS.slice(0, 1)}>
        <ModelPicker />
      </ModelsProvider>,
    )
    expect(html).toBe('')
  })
})
