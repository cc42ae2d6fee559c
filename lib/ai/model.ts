import { createOpenAI } from '@ai-sdk/openai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { LanguageModel } from 'ai'
import { env, type Env } from '@/lib/env'
import type { ModelEntry } from './model-list'
import { createOfflineModel } from './offline-model'

/** What model selection reads of the configuration (lib/env.ts validates it). */
export type ModelConfig = Partial<Pick<Env, 'A2_MODELS' | 'OPENAI_API_KEY' | 'OPENAI_BASE_URL' | 'OPENAI_MODEL' | 'OFFLINE_MS_PER_TOKEN'>>

/** A configured model, ready to be called: its entry's id, label and capabilities, and the model itself. */
export interface ChatModel {
  id: string
  label: string
  reasoning: boolean
  tools: boolean
  /** The kinds of file it is sent as files (AI SDK file parts); the rest go as text. */
  files: Array<'image' | 'pdf'>
  model: LanguageModel
}

/**
 * Sent as the key to a keyless OpenAI-compatible server (llama.cpp, Ollama, vLLM without
 * --api-key): they ignore the Authorization header, and the provider needs some key, else it
 * looks for OPENAI_API_KEY itself and fails the first call.
 */
export const KEYLESS_API_KEY = 'keyless'

/**
 * The models on offer, the default first: `A2_MODELS` when set; otherwise the one model today's
 * variables name — OpenAI, or any OpenAI-compatible server at OPENAI_BASE_URL (with or without a
 * key), sent tools as before — or, with neither, the built-in offline models (full and brief),
 * so the app works, and offers a choice, with no setup.
 */
export function modelList(config: ModelConfig = env()): ModelEntry[] {
  if (config.A2_MODELS) return config.A2_MODELS
  if (config.OPENAI_API_KEY || config.OPENAI_BASE_URL) {
    const modelId = config.OPENAI_MODEL ?? 'gpt-4o-mini'
    return [
      {
        id: modelId,
        // The name people know the model by, as they would type it; the provider is no part of it.
        label: modelId,
        provider: 'openai',
        baseURL: config.OPENAI_BASE_URL,
        apiKey: config.OPENAI_API_KEY,
        reasoning: false,
        tools: true,
      },
    ]
  }
  // Two, so the picker offers a real choice with no network: each answers in its own way.
  // Labels a reader understands: the picker and every answer show them (ids are for the wire).
  return [
    { id: 'offline', label: 'Offline', provider: 'offline', reasoning: false, tools: true },
    { id: 'offline-brief', label: 'Offline, brief', provider: 'offline', style: 'brief', reasoning: false, tools: true },
  ]
}

/** Every configured model, built; the default first. The configuration is a parameter so tests can pass their own. */
export function selectModels(config: ModelConfig = env()): ChatModel[] {
  return modelList(config).map((entry) => ({
    id: entry.id,
    label: entry.label,
    reasoning: entry.reasoning,
    tools: entry.tools,
    files: entry.files ?? [],
    model: build(entry, config),
  }))
}

/** The default model: the first configured. */
export function selectModel(config: ModelConfig = env()): ChatModel {
  return selectModels(config)[0]
}

function build(entry: ModelEntry, config: ModelConfig): LanguageModel {
  if (entry.provider === 'offline') {
    const msPerToken = config.OFFLINE_MS_PER_TOKEN
    return createOfflineModel({ style: entry.style, ...(msPerToken === undefined ? {} : { msPerToken }) })
  }
  // OpenAI's own key goes only to OpenAI: a server at baseURL gets its entry's key or none.
  const apiKey = entry.apiKey ?? (entry.baseURL ? KEYLESS_API_KEY : config.OPENAI_API_KEY)
  // A server at baseURL (llama.cpp, vLLM, Ollama) streams a reasoning model's thinking as
  // `delta.reasoning_content`, which @ai-sdk/openai's chat model drops and the compatible
  // provider reads; it asks for the usage chunk too (stream_options.include_usage).
  if (entry.baseURL) {
    return createOpenAICompatible({
      name: 'openai-compatible',
      baseURL: entry.baseURL,
      apiKey: apiKey ?? KEYLESS_API_KEY,
      includeUsage: true,
    }).chatModel(entry.model ?? entry.id)
  }
  const provider = createOpenAI({ apiKey: apiKey ?? KEYLESS_API_KEY })
  // .chat() is chat completions; provider(id) would target the Responses API instead.
  return provider.chat(entry.model ?? entry.id)
}
