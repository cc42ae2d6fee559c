import { createOpenAI } from '@ai-sdk/openai'
import type { LanguageModel } from 'ai'
import { env, type Env } from '@/lib/env'
import { createOfflineModel } from './offline-model'

/** What model selection reads of the configuration (lib/env.ts validates it). */
export type ModelConfig = Partial<Pick<Env, 'OPENAI_API_KEY' | 'OPENAI_BASE_URL' | 'OPENAI_MODEL' | 'OFFLINE_MS_PER_TOKEN'>>

/**
 * Sent as the key to a keyless OpenAI-compatible server (llama.cpp, Ollama, vLLM without
 * --api-key): they ignore the Authorization header, and the provider needs some key, else it
 * looks for OPENAI_API_KEY itself and fails the first call.
 */
export const KEYLESS_API_KEY = 'keyless'

/**
 * Picks the model for a chat turn: OpenAI, or any OpenAI-compatible server at OPENAI_BASE_URL
 * (with or without a key), when either is configured; otherwise the built-in offline model, so
 * the app works with no setup. The configuration is a parameter so tests can pass their own.
 */
export function selectModel(config: ModelConfig = env()): { model: LanguageModel; label: string } {
  if (config.OPENAI_API_KEY || config.OPENAI_BASE_URL) {
    const provider = createOpenAI({ apiKey: config.OPENAI_API_KEY ?? KEYLESS_API_KEY, baseURL: config.OPENAI_BASE_URL })
    const modelId = config.OPENAI_MODEL ?? 'gpt-4o-mini'
    // .chat() is chat completions, which every OpenAI-compatible server speaks;
    // provider(id) would target the Responses API instead.
    return { model: provider.chat(modelId), label: `openai/${modelId}` }
  }
  const msPerToken = config.OFFLINE_MS_PER_TOKEN
  return { model: createOfflineModel(msPerToken === undefined ? {} : { msPerToken }), label: 'a2-offline/offline' }
}
