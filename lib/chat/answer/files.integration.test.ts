/**
 * A message's files reach the model, on both stores: the offline model answers about what it
 * was given (names, types, sizes, a text file's first lines, a PDF's page count, and that it
 * cannot see an image); through the real provider path (@ai-sdk/openai-compatible against the
 * test upstream, which records every request), a model configured `files: ["image", "pdf"]` is
 * sent the image as a file part, and one that is not gets the text and a line about the image.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import type { A2Server } from '@/lib/a2/server'
import { layers } from '@/test/db'
import { useTestStore } from '@/test/chat'
import { waitUntil } from '@/lib/a2/testing'
import { pdf, png, text } from '@/test/file-fixtures'
import { startUpstream, type Upstream } from '@/scripts/upstream-server'
import { filesOf, fileLimits } from '@/lib/files'
import { parseEnv } from '@/lib/env'
import { pdfFacts } from '@/lib/files/extract'
import { buildChatServer } from '../server/chat-server'
import type { Chat, ChatEvent, FileRef } from '../contract'
import { answerText, foldChat, type AnswerTurn } from '../fold/reducer'

describe.each(layers)('files sent to the model on %s', (kind) => {
  const store = useTestStore(kind)
  let upstream: Upstream
  let built: ReturnType<typeof buildChatServer> | undefined
  beforeAll(async () => {
    upstream = await startUpstream({ tokenMs: 1, tokens: 3 })
    // pdf.js is large: loaded once here (seconds on a busy machine), not inside the first answer's wait.
    expect((await pdfFacts(pdf(1)))?.pages).toBe(1)
  }, 180_000)
  afterAll(async () => upstream.close())
  afterEach(async () => {
    await built?.server.stopWorkers()
    built = undefined
  })

  /** The log once its answer finished: 30 s, as a busy machine's first answer with a PDF may take (the file is read and parsed first). */
  const logWhenFinished = (server: A2Server<Chat>, id: string, owner: string) =>
    waitUntil(
      async () => {
        const events = (await server.read(id, owner, { limit: 10_000 })) as ChatEvent[]
        return events.some((e) => e.type === 'finished') ? events : undefined
      },
      'the answer to finish',
      30_000,
    )

  async function withFiles(server: A2Server<Chat>, owner: string, words: string, model?: string) {
    const files = filesOf(store().db)
    expect(fileLimits(parseEnv({})).maxFileBytes).toBeGreaterThan(1024)
    const refs: FileRef[] = [
      await files.upload(owner, 'notes.txt', text('Shopping list\nmilk\neggs\nflour\nsugar\n')),
      await files.upload(owner, 'report.pdf', pdf(3)),
      await files.upload(owner, 'cat.png', png(4, 4)),
    ]
    const { id } = await server.sessions.create(owner)
    await files.admitMessageFiles(owner, id, refs)
    await server.push(id, owner, {
      events: [
        { id: 'm1', type: 'message', payload: { text: words, files: refs } },
        { id: 'g1', type: 'generate', payload: model ? { for: 'm1', model } : { for: 'm1' } },
      ],
    })
    return id
  }

  it('the offline model answers about what it was given', async () => {
    built = buildChatServer(store(), { OFFLINE_MS_PER_TOKEN: 0 })
    await built.server.startWorker({ pollMs: 50 })
    const id = await withFiles(built.server, 'olga', 'What did I send you?')
    const log = await logWhenFinished(built.server, id, 'olga')
    expect(log.find((e) => e.type === 'finished')?.payload).toMatchObject({ reason: 'stop' })
    const answer = answerText(foldChat(log).turns.find((t) => t.id === 'g1') as AnswerTurn)
    expect(answer).toContain('You gave me 3 files')
    expect(answer).toMatch(/\*\*notes\.txt\*\* — a text file, \d+ bytes\. It begins:\n {2}> Shopping list\n {2}> milk\n {2}> eggs/)
    expect(answer).toMatch(/\*\*report\.pdf\*\* — a PDF, 3 pages, [\d.]+ (bytes|KB)\./)
    expect(answer).toContain('**cat.png** — a PNG image, ')
    expect(answer).toContain("I can't see images")
  })

  it('a model configured for images and PDFs gets them as file parts; one that is not gets their text and a line about the image', async () => {
    built = buildChatServer(store(), {
      A2_MODELS: [
        {
          id: 'vision',
          label: 'Vision',
          provider: 'openai',
          baseURL: upstream.url,
          model: 'vision-upstream',
          reasoning: false,
          tools: false,
          files: ['image', 'pdf'],
        },
        { id: 'plain', label: 'Plain', provider: 'openai', baseURL: upstream.url, model: 'plain-upstream', reasoning: false, tools: false },
      ],
    })
    await built.server.startWorker({ pollMs: 50 })
    await logWhenFinished(built.server, await withFiles(built.server, 'olga', 'Look (vision)', 'vision'), 'olga')
    await logWhenFinished(built.server, await withFiles(built.server, 'olga', 'Look (plain)', 'plain'), 'olga')
    const sent = (words: string) => JSON.stringify(upstream.requests.find((r) => JSON.stringify(r.body.messages).includes(words))!.body.messages)

    const vision = sent('Look (vision)')
    expect(vision).toContain(`data:image/png;base64,${Buffer.from(png(4, 4)).toString('base64')}`)
    expect(vision).toContain('Shopping list') // a text file is text for every model

    const plain = sent('Look (plain)')
    expect(plain).not.toContain('data:image/png')
    expect(plain).toContain('[Attached file \\"cat.png\\" — image/png')
    expect(plain).toContain('an image this model cannot see')
    expect(plain).toContain('3 pages')
    expect(plain).toContain('Page 1 of the test')
    expect(plain).toContain('Shopping list\\nmilk')
  })

  it('a Stop, a Continue and a retried attempt of an answer with files: each model request carries them, and the Stop cuts as for any answer', async () => {
    // 200 tokens at 5 ms: a second to stop it in, and a continuation that ends soon after.
    const slow = await startUpstream({ tokenMs: 5, tokens: 200 })
    onTestFinished(() => slow.close())
    built = buildChatServer(store(), {
      A2_MODELS: [
        {
          id: 'vision',
          label: 'Vision',
          provider: 'openai',
          baseURL: slow.url,
          model: 'vision-upstream',
          reasoning: false,
          tools: false,
          files: ['image'],
        },
      ],
    })
    await built.server.startWorker({ pollMs: 50 })
    const image = `data:image/png;base64,${Buffer.from(png(4, 4)).toString('base64')}`
    const requestsWith = (words: string) => [...slow.requests, ...slow.refused].filter((r) => JSON.stringify(r.body.messages).includes(words))
    // The first attempt is refused (503): the retry builds its request again, files and all.
    const id = await withFiles(built.server, 'pia', 'Stop me [[fail 1 503]]', 'vision')
    const read = async () => (await built!.server.read(id, 'pia', { limit: 10_000 })) as ChatEvent[]
    const seen = await waitUntil(async () => (await read()).filter((e) => e.type === 'chunk').at(4)?.index, 'five chunks')
    await built.server.push(id, 'pia', { events: [{ type: 'cancelled', payload: { of: 'g1', lastSeenIndex: seen } }] })
    const stopped = await logWhenFinished(built.server, id, 'pia')
    const first = foldChat(stopped).turns.find((t) => t.id === 'g1') as AnswerTurn
    expect(first.status).toBe('stopped')
    const shown = stopped.filter((e) => e.type === 'chunk' && e.index <= seen).map((e) => (e.type === 'chunk' ? e.payload.delta : ''))
    expect(answerText(first)).toBe(shown.join(''))

    await built.server.push(id, 'pia', { events: [{ id: 'g2', type: 'generate', payload: { for: 'm1', continues: 'g1', model: 'vision' } }] })
    await waitUntil(
      async () => (await read()).some((e) => e.type === 'finished' && e.payload.of === 'g2') || undefined,
      'the continuation to finish',
      30_000,
    )
    const sent = requestsWith('Stop me')
    expect(sent.length).toBe(3) // refused, retried (then stopped), continued
    for (const request of sent) expect(JSON.stringify(request.body.messages)).toContain(image)
    // The continuation was told the answer so far: what the reader saw of the stopped one.
    expect(JSON.stringify(slow.requests.at(-1)!.body.messages)).toContain(JSON.stringify(shown.join('')).slice(1, -1))
  }, 90_000)
})
