'use client'
/**
 * The models this server offers (served with the page by the root layout: ids, labels and
 * capabilities, no secrets) and the one this browser picked. The pick is a preference kept in
 * localStorage, so the "/" page's choice is the one the chat page's first message uses, and a
 * reload keeps it; an id the server no longer offers falls back to the default (the first).
 */
import { createContext, useCallback, useContext, useSyncExternalStore } from 'react'
import type { ModelInfo } from '@/lib/ai/model-list'

const ModelsContext = createContext<readonly ModelInfo[]>([])

export function ModelsProvider({ models, children }: { models: readonly ModelInfo[]; children: React.ReactNode }) {
  return <ModelsContext.Provider value={models}>{children}</ModelsContext.Provider>
}

const CHOICE_KEY = 'a2-model'
const listeners = new Set<() => void>()

function storedChoice(): string | null {
  try {
    return localStorage.getItem(CHOICE_KEY)
  } catch {
    return null // storage refused (a private window's quota): the default
  }
}

/** The id the next generate names: the stored pick when the server offers it, else the default. Read when sending, not from a render. */
export function chosenModel(models: readonly ModelInfo[]): string | undefined {
  const stored = storedChoice()
  return models.find((m) => m.id === stored)?.id ?? models[0]?.id
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener)
  // Another tab's pick: the same preference.
  const onStorage = (e: StorageEvent) => e.key === CHOICE_KEY && listener()
  window.addEventListener('storage', onStorage)
  return () => {
    listeners.delete(listener)
    window.removeEventListener('storage', onStorage)
  }
}

export function useModels() {
  const models = useContext(ModelsContext)
  const stored = useSyncExternalStore(subscribe, storedChoice, () => null)
  const chosen = models.find((m) => m.id === stored) ?? models[0]
  const choose = useCallback((id: string) => {
    try {
      localStorage.setItem(CHOICE_KEY, id)
    } catch {
      // kept for this page only
    }
    listeners.forEach((listener) => listener())
  }, [])
  /** The label of model `id` (an answer's): the id itself for one no longer offered; unset, the default's. */
  const labelOf = useCallback(
    (id: string | undefined) => (id === undefined ? models[0]?.label : (models.find((m) => m.id === id)?.label ?? id)),
    [models],
  )
  return { models, chosen, choose, labelOf }
}
