/**
 * The webhook lookup (docs/webhook.md): a call cut off mid-POST is settled as done or as not
 * done only by an answer in the protocol's own words naming the key asked; anything else a real
 * HTTP endpoint may answer a GET with leaves it 'unknown' (issue 36, item 4: a bare 404 read as
 * "did not happen", any 200 as "Done").
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { webhook } from './webhook'

/** What the endpoint answers the next GET: status, content type, body (`KEY` is replaced by the key asked). */
let answer: { status: number; type?: string; body?: string } = { status: 200 }
let server: Server
let url: string

beforeAll(async () => {
  server = createServer((req, res) => {
    const key = new URL(req.url ?? '/', 'http://x').searchParams.get('idempotencyKey') ?? ''
    res.writeHead(answer.status, answer.type ? { 'content-type': answer.type } : {})
    res.end(answer.body?.replaceAll('KEY', key))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const json = 'application/json'

describe('asking the receiver about a delivery', () => {
  it.each([
    ['a bare 404', { status: 404 }],
    ['a bare 200', { status: 200 }],
    ['a 404 with a JSON error page', { status: 404, type: json, body: '{"error":"not found"}' }],
    ['an app shell (200 HTML)', { status: 200, type: 'text/html', body: '<!doctype html><div id="root"></div>' }],
    ['a 200 with any JSON', { status: 200, type: json, body: '{"ok":true}' }],
    ['a 500', { status: 500, type: json, body: '{"idempotencyKey":"KEY","delivery":"none"}' }],
    ['a 503', { status: 503 }],
    ['another key', { status: 200, type: json, body: '{"idempotencyKey":"other","delivery":"received","receipt":{}}' }],
    ['another word', { status: 200, type: json, body: '{"idempotencyKey":"KEY","delivery":"maybe"}' }],
    ['the key as a number', { status: 200, type: json, body: '{"idempotencyKey":1,"delivery":"none"}' }],
    ['an array', { status: 200, type: json, body: '[{"idempotencyKey":"KEY","delivery":"none"}]' }],
    ['cut-off JSON', { status: 200, type: json, body: '{"idempotencyKey":"KEY","deliv' }],
    ['an old receiver’s "has it"', { status: 200, type: json, body: '{"key":"KEY","received":true}' }],
  ])('%s: unknown', async (_what, given) => {
    answer = given
    expect(await webhook(url).ask('a2-1-tool:sendWebhook:call_1')).toBe('unknown')
  })

  it('an endpoint nobody listens on: unknown', async () => {
    expect(await webhook('http://127.0.0.1:1/hook').ask('k')).toBe('unknown')
  })

  it('"received" for the key asked: done, with the receipt', async () => {
    answer = { status: 200, type: json, body: '{"idempotencyKey":"KEY","delivery":"received","receipt":{"id":7}}' }
    expect(await webhook(url).ask('a2-1-tool:sendWebhook:call_1')).toEqual({ done: true, result: { status: 200, receipt: { id: 7 } } })
  })

  it('"none" for the key asked: not done', async () => {
    answer = { status: 200, type: json, body: '{"idempotencyKey":"KEY","delivery":"none"}' }
    expect(await webhook(url).ask('a2-1-tool:sendWebhook:call_1')).toEqual({ done: false })
  })
})
