import { createOpenAI } from '@ai-sdk/openai'
import type { LanguageModel } from 'ai'
import { createOfflineModel } from './offline-model'

type Env = Record<string, string | undefined>

/**
 * Picks the model for a chat turn: OpenAI (or any compatible server via
 * OPENAI_BASE_URL) when a key is configured, otherwise the built-in offline model,
 * so the app works with no setup. Env is a parameter so tests can pass their own.
 */
export function selectModel(env: Env = process.env): { model: LanguageModel; label: string } {
  if (env.OPENAI_API_KEY) {
    const provider = createOpenAI({ apiKey: env.OPENAI_API_KEY, baseURL: env.OPENAI_BASE_URL || undefined })
    const modelId = env.OPENAI_MODEL || 'gpt-4o-mini'
    // .chat() is chat completions, which every OpenAI-compatible server speaks;
    // provider(id) would target the Responses API instead.
    return { model: provider.chat(modelId), label: `openai/${modelId}` }
  }

  // An unset or malformed value falls back to the model's reading-pace default.
  const msPerToken = env.OFFLINE_MS_PER_TOKEN ? Number(env.OFFLINE_MS_PER_TOKEN) : NaN
  const paced = Number.isFinite(msPerToken) && msPerToken >= 0
  return { model: createOfflineModel(paced ? { msPerToken } : {}), label: 'a2-offline/offline' }
}
