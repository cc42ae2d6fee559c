'use client'
import { useModels } from '../models'

/** The composer's model picker: which configured model answers the next message, regenerate or Continue. Nothing to pick with one model. */
export function ModelPicker({ disabled = false }: { disabled?: boolean }) {
  const { models, chosen, choose } = useModels()
  if (models.length < 2 || !chosen) return null
  return (
    <>
      <label htmlFor="model-picker" className="sr-only">
        Model
      </label>
      <select
        id="model-picker"
        data-testid="model-picker"
        value={chosen.id}
        disabled={disabled}
        onChange={(e) => choose(e.target.value)}
        title="The model that answers"
        className="mb-1 h-8 max-w-40 shrink-0 truncate rounded-full border border-neutral-200 bg-transparent px-2 text-xs text-neutral-600 outline-none hover:bg-neutral-50 focus-visible:border-neutral-400 dark:border-neutral-700 dark:text-neutral-300 dark:hover:bg-neutral-700/50"
      >
        {models.map((m) => (
          <option key={m.id} value={m.id}>
            {m.label}
          </option>
        ))}
      </select>
    </>
  )
}
