/**
 * A generate's `model` and `continues` at the push route, as Next calls it: an id the server
 * does not offer (hostile ones included) is a typed 400, a Continue of anything but an answer to
 * the same message a typed 422, and a refused push writes nothing; the offered ids and a proper
 * Continue are taken. The page is told the list without its secrets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { modelList } from '@/lib/ai/model'
import { publicModels } from '@/lib/ai/model-list'
import { waitUntil } from '@/lib/a2/testing'

/** Two offered models; the second has a key and a server the page must never see. */
const MODELS = JSON.stringify([
  { id: 'offline', label: 'Offline', provider: 'offline', reasoning: false, tools: true },
  {
    id: 'local',
    label: 'Local',
    provider: 'openai',
    baseURL: 'http://127.0.0.1:9/v1',
    apiKey: 'sk-secret-key',
    model: 'llama-1b',
    reasoning: false,
    tools: false,
  },
])

describe.each(layers)('a generate naming a model or a Continue, at the push route on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({ databaseUrl: kind === 'postgres' ? testDb.url : undefined, env: { A2_MODELS: MODELS } })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    delete process.env.A2_MODELS
    await testDb.drop()
  })

  const base = 'http://localhost:3000'
  const params = (id: string) => ({ params: Promise.resolve({ id }) })

  async function newChat() {
    const created = await routes.sessions.GET(new Request(`${base}/api/sessions`))
    const cookie = created.headers.get('set-cookie')!.split(';')[0]
    const response = await routes.sessions.POST(
      new Request(`${base}/api/sessions`, { method: 'POST', headers: { cookie, origin: base, 'content-type': 'application/json' }, body: '{}' }),
    )
    const id = ((await response.json()) as { session: { id: string } }).session.id
    return { cookie, id }
  }
  const push = (chat: { id: string; cookie: string }, body: unknown) =>
    routes.events.POST(
      new Request(`${base}/api/sessions/${chat.id}/events`, {
        method: 'POST',
        headers: { cookie: chat.cookie, origin: base, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
      params(chat.id),
    )
  const logOf = async (chat: { id: string; cookie: string }) => {
    const { server } = await routes.chatServer.getChatServer()
    const userId = decodeURIComponent(chat.cookie.split('=')[1]).split('.')[0]
    return server.read(chat.id, userId)
  }
  /** A chat whose message m1 has a stopped answer g1, and message m2 an answer g2 (no worker runs: the log is all there is). */
  async function chatWithAnswers() {
    const chat = await newChat()
    const first = await push(chat, {
      events: [
        { id: 'm1', type: 'message', payload: { text: 'one' } },
        { id: 'g1', type: 'generate', payload: { for: 'm1', model: 'local' } },
        { type: 'cancelled', payload: { of: 'g1', lastSeenIndex: 1 } },
        { id: 'm2', type: 'message', payload: { text: 'two', after: 'g1' } },
        { id: 'g2', type: 'generate', payload: { for: 'm2' } },
        { type: 'cancelled', payload: { of: 'g2', lastSeenIndex: 4 } },
      ],
    })
    expect(first.status).toBe(201)
    return chat
  }

  it.each([
    ['an id not on the list', 'gpt-5'],
    ['another case of an offered id', 'LOCAL'],
    ['an offered id with a space', 'local '],
    ['a path', '../offline'],
    ['an object key', '__proto__'],
    ['an inherited name', 'toString'],
    ['an empty string', ''],
    ['a NUL', 'local\u0000'],
  ])('%s is a typed 400 and nothing is written', async (_, model) => {
    const chat = await chatWithAnswers()
    const before = (await logOf(chat)).length
    const response = await push(chat, { type: 'generate', payload: { for: 'm1', replaces: 'g1', model } })
    expect(response.status).toBe(400)
    const { error } = (await response.json()) as { error: { code: string } }
    expect(['invalid_payload', 'invalid_text']).toContain(error.code)
    expect(await logOf(chat)).toHaveLength(before)
  })

  it('an id past the contract bound (64) or not a string is a 400 from the schema; nothing written', async () => {
    const chat = await chatWithAnswers()
    const before = (await logOf(chat)).length
    for (const model of ['x'.repeat(65), 7, { id: 'local' }, null]) {
      const response = await push(chat, { type: 'generate', payload: { for: 'm1', model } })
      expect(response.status).toBe(400)
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_payload')
    }
    expect(await logOf(chat)).toHaveLength(before)
  })

  it.each([
    ['an answer to another message', 'g2'],
    ['a message, not an answer', 'm1'],
    ['an answer not in this chat', 'g-nowhere'],
  ])('a Continue of %s is a typed 422 and nothing is written', async (_, continues) => {
    const chat = await chatWithAnswers()
    const before = (await logOf(chat)).length
    const response = await push(chat, { type: 'generate', payload: { for: 'm1', continues } })
    expect(response.status).toBe(422)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_reference')
    expect(await logOf(chat)).toHaveLength(before)
  })

  it('an offered id and a Continue of an answer to the same message are taken as sent', async () => {
    const chat = await chatWithAnswers()
    // A worker settles the two stopped runs (cancelled before they were claimed: never run), so no answer to m1 is running.
    const { server } = await routes.chatServer.getChatServer()
    await server.startWorker({ pollMs: 50 })
    await waitUntil(
      async () => ((await logOf(chat)).filter((e) => e.type === 'finished').length === 2 ? true : undefined),
      'both stopped runs to settle',
    )
    const response = await push(chat, { id: 'g3', type: 'generate', payload: { for: 'm1', continues: 'g1', model: 'offline' } })
    expect(response.status).toBe(201)
    const log = await logOf(chat)
    expect(log.at(-1)).toMatchObject({ id: 'g3', type: 'generate', payload: { for: 'm1', continues: 'g1', model: 'offline' } })
  })

  it('the page is told ids, labels and capabilities: no key, no server, no upstream name', () => {
    const told = publicModels(modelList())
    expect(told).toEqual([
      { id: 'offline', label: 'Offline', reasoning: false, tools: true },
      { id: 'local', label: 'Local', reasoning: false, tools: false },
    ])
    expect(JSON.stringify(told)).not.toMatch(/sk-secret-key|127\.0\.0\.1|llama-1b/)
  })
})
