/**
 * Attachments through the HTTP surface, on both stores and both back ends (the database's own
 * table, and a real S3-compatible server started here): an upload is served to its owner only
 * (any other identity, or none, gets a 404 or a 401), a message carries it by reference, a live
 * share link of that chat reads it and loses it at Stop sharing, deleting the chat deletes rows
 * and bytes, and every hostile upload (fast-check, each class) is a typed 4xx that stores nothing.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { startS3Server, type TestS3 } from '@/test/s3-server'
import { gif, pdf, png, text } from '@/test/file-fixtures'
import type { FileRef } from '@/lib/files'

const MAX_FILE_BYTES = 64 * 1024
const ACCOUNT_QUOTA = 1024 * 1024
const GUEST_QUOTA = 256 * 1024
const cases = layers.flatMap((kind) => (['db', 's3'] as const).map((backend) => [kind, backend] as const))

describe.each(cases)('attachments on %s, bytes in %s', (kind, backend) => {
  let testDb: TestDb
  let s3: TestS3 | undefined
  let routes: Awaited<ReturnType<typeof loadRoutes>>
  beforeAll(async () => {
    testDb = await createTestDb(kind)
    for (const name of Object.keys(process.env)) if (name.startsWith('A2_S3_')) delete process.env[name]
    s3 = backend === 's3' ? await startS3Server() : undefined
    routes = await loadRoutes({
      databaseUrl: kind === 'postgres' ? testDb.url : undefined,
      env: {
        A2_MAX_FILE_BYTES: String(MAX_FILE_BYTES),
        A2_FILE_QUOTA_BYTES_PER_USER: String(ACCOUNT_QUOTA),
        A2_FILE_QUOTA_BYTES_PER_GUEST: String(GUEST_QUOTA),
        A2_BODY_TIMEOUT_MS: '2000',
        ...s3?.env,
      },
    })
    // The store opens (and PGlite migrates) on the first request: here, not in the first test's 30 s.
    await routes.newUser()
  }, 180_000)
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
    await s3?.stop()
  })

  const files = async () => (await import('@/lib/files')).getFiles()
  const anonymous = { 'sec-fetch-site': 'none', origin: '' }

  function upload(cookie: string, bytes: Uint8Array | ReadableStream<Uint8Array>, name: string | null, rawName?: string) {
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' }
    // A browser's upload declares its length (a File or Blob body): the S3 back end stores it as it arrives.
    if (bytes instanceof Uint8Array) headers['content-length'] = String(bytes.length)
    if (rawName !== undefined) headers['x-file-name'] = rawName
    else if (name !== null) headers['x-file-name'] = encodeURIComponent(name)
    return routes.call('POST', '/api/files', { cookie, body: bytes, headers })
  }
  async function uploaded(cookie: string, bytes: Uint8Array, name: string): Promise<FileRef> {
    const response = await upload(cookie, bytes, name)
    expect(response.status, await response.clone().text()).toBe(201)
    return ((await response.json()) as { file: FileRef }).file
  }
  /** Signs the guest of `guestCookie` up to an account (which adopts their chats and files), and in: the account's cookie. */
  async function signUp(guestCookie: string, email: string): Promise<{ cookie: string }> {
    const password = 'correct horse battery'
    const json = (value: unknown) => JSON.stringify(value)
    const signedUp = await routes.call('POST', '/api/auth/sign-up/email', { cookie: guestCookie, body: json({ name: 'Ada', email, password }) })
    expect(signedUp.status, await signedUp.clone().text()).toBe(200)
    const signedIn = await routes.call('POST', '/api/auth/sign-in/email', { cookie: guestCookie, body: json({ email, password }) })
    expect(signedIn.status, await signedIn.clone().text()).toBe(200)
    const cookie = signedIn.headers
      .getSetCookie()
      .map((line) => line.split(';')[0])
      .filter((pair) => !pair.endsWith('='))
      .join('; ')
    return { cookie }
  }
  const message = (id: string, words: string, refs: FileRef[]) =>
    JSON.stringify({ events: [{ id, type: 'message', payload: { text: words, files: refs } }] })

  it('an upload is served to its owner, typed from its bytes, and to no one else', async () => {
    const owner = await routes.newUser()
    const bytes = png(4, 4)
    const ref = await uploaded(owner.cookie, bytes, 'photo.txt') // the name says text: the bytes say PNG
    expect(ref).toMatchObject({ name: 'photo.txt', mediaType: 'image/png', size: bytes.length })
    expect(ref.sha256).toMatch(/^[0-9a-f]{64}$/)

    const served = await routes.call('GET', `/api/files/${ref.id}`, { cookie: owner.cookie })
    expect(served.status).toBe(200)
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(bytes)
    expect(served.headers.get('content-type')).toBe('image/png')
    expect(served.headers.get('x-content-type-options')).toBe('nosniff')
    expect(served.headers.get('content-security-policy')).toContain("default-src 'none'")
    expect(served.headers.get('content-disposition')).toMatch(/^inline; filename="photo.txt"/)
    expect(served.headers.get('cache-control')).toBe('no-store')

    const other = await routes.newUser()
    expect((await routes.call('GET', `/api/files/${ref.id}`, { cookie: other.cookie })).status).toBe(404)
    expect((await routes.call('GET', `/api/files/${ref.id}`, {})).status).toBe(401)
    expect((await routes.call('GET', `/api/files/not-a-uuid`, { cookie: owner.cookie })).status).toBe(400)
  })

  it('an image is also served as a thumbnail (WebP, at most 320 px a side, smaller than the original), under the same checks', async () => {
    const owner = await routes.newUser()
    const bytes = png(800, 600)
    const ref = await uploaded(owner.cookie, bytes, 'wide.png')
    const thumb = await routes.call('GET', `/api/files/${ref.id}?thumb=1`, { cookie: owner.cookie })
    expect(thumb.status).toBe(200)
    expect(thumb.headers.get('content-type')).toBe('image/webp')
    expect(thumb.headers.get('x-content-type-options')).toBe('nosniff')
    expect(thumb.headers.get('content-disposition')).toMatch(/^inline/)
    const small = new Uint8Array(await thumb.arrayBuffer())
    expect(small.byteLength).toBeLessThan(bytes.byteLength)
    const { default: sharp } = await import('sharp')
    expect(await sharp(small).metadata()).toMatchObject({ format: 'webp', width: 320, height: 240 })
    // Whoever may not read the file may not read its thumbnail.
    const other = await routes.newUser()
    expect((await routes.call('GET', `/api/files/${ref.id}?thumb=1`, { cookie: other.cookie })).status).toBe(404)
    // A file that is no image has no thumbnail: asked for one, the file is what is served (a download).
    const doc = await uploaded(owner.cookie, pdf(1), 'one.pdf')
    const docThumb = await routes.call('GET', `/api/files/${doc.id}?thumb=1`, { cookie: owner.cookie })
    expect(docThumb.headers.get('content-type')).toBe('application/pdf')
    expect(docThumb.headers.get('content-disposition')).toMatch(/^attachment/)
    // A share viewer of the chat gets the thumbnail too.
    expect((await routes.push(owner.sessionId, owner.cookie, message('m1', 'look', [ref]))).status).toBe(201)
    const made = await routes.call('POST', `/api/sessions/${owner.sessionId}/share`, { cookie: owner.cookie, body: '{}' })
    const token = ((await made.json()) as { path: string }).path.replace('/s/', '')
    const viewed = await routes.call('GET', `/api/shared/${token}/files/${ref.id}?thumb=1`, { headers: anonymous })
    expect(viewed.headers.get('content-type')).toBe('image/webp')
    expect(new Uint8Array(await viewed.arrayBuffer())).toEqual(small)
  })

  it('text, SVG and PDFs are downloads, never rendered inline', async () => {
    const owner = await routes.newUser()
    const svg = await uploaded(owner.cookie, text('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>'), 'x.svg')
    expect(svg.mediaType).toBe('text/plain')
    const served = await routes.call('GET', `/api/files/${svg.id}`, { cookie: owner.cookie })
    expect(served.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(served.headers.get('content-disposition')).toMatch(/^attachment; filename="x.svg"/)
    const doc = await uploaded(owner.cookie, pdf(3), 'report «final».pdf')
    expect(doc.mediaType).toBe('application/pdf')
    const pdfServed = await routes.call('GET', `/api/files/${doc.id}`, { cookie: owner.cookie })
    expect(pdfServed.headers.get('content-disposition')).toBe(
      `attachment; filename="report _final_.pdf"; filename*=UTF-8''report%20%C2%ABfinal%C2%BB.pdf`,
    )
    const image = await uploaded(owner.cookie, gif(), 'dot.gif')
    expect((await routes.call('GET', `/api/files/${image.id}?download=1`, { cookie: owner.cookie })).headers.get('content-disposition')).toMatch(
      /^attachment/,
    )
  })

  it('a message carries its files by reference; the share viewer sees them until Stop sharing; the chat takes them when deleted', async () => {
    const owner = await routes.newUser()
    const ref = await uploaded(owner.cookie, png(), 'cat.png')
    const pushed = await routes.push(owner.sessionId, owner.cookie, message('m1', 'what is this?', [ref]))
    expect(pushed.status, await pushed.clone().text()).toBe(201)

    const snapshot = await (await routes.call('GET', `/api/sessions/${owner.sessionId}/snapshot`, { cookie: owner.cookie })).text()
    expect(snapshot).toContain(ref.id)
    expect(snapshot).toContain(ref.sha256)

    const made = await routes.call('POST', `/api/sessions/${owner.sessionId}/share`, { cookie: owner.cookie, body: '{}' })
    const token = ((await made.json()) as { path: string }).path.replace('/s/', '')
    const viewed = await routes.call('GET', `/api/shared/${token}/files/${ref.id}`, { headers: anonymous })
    expect(viewed.status).toBe(200)
    expect(viewed.headers.get('set-cookie')).toBeNull()
    // The link reads only files its chat's messages name.
    const unnamed = await uploaded(owner.cookie, png(2, 2), 'other.png')
    expect((await routes.call('GET', `/api/shared/${token}/files/${unnamed.id}`, { headers: anonymous })).status).toBe(404)

    const asJson = { 'content-type': 'application/json' }
    expect((await routes.call('DELETE', `/api/sessions/${owner.sessionId}/share`, { cookie: owner.cookie, headers: asJson })).status).toBe(204)
    expect((await routes.call('GET', `/api/shared/${token}/files/${ref.id}`, { headers: anonymous })).status).toBe(404)
    expect((await routes.call('GET', `/api/files/${ref.id}`, { cookie: owner.cookie })).status).toBe(200)

    const before = await (await files()).census()
    expect(before.blobs).toContain(ref.id)
    expect((await routes.call('DELETE', `/api/sessions/${owner.sessionId}`, { cookie: owner.cookie, headers: asJson })).status).toBe(204)
    const after = await (await files()).census()
    expect(after.blobs).not.toContain(ref.id)
    expect(after.rows).toBe(before.rows - 1)
    expect((await routes.call('GET', `/api/files/${ref.id}`, { cookie: owner.cookie })).status).toBe(404)
  })

  it('a message may be files alone: admitted with empty text and titled by their names; empty text and no files is still a 400', async () => {
    const owner = await routes.newUser()
    const ref = await uploaded(owner.cookie, png(), 'holiday photo.png')
    const pushed = await routes.push(owner.sessionId, owner.cookie, message('m1', '', [ref]))
    expect(pushed.status, await pushed.clone().text()).toBe(201)
    const list = (await (await routes.call('GET', '/api/sessions', { cookie: owner.cookie })).json()) as {
      sessions: Array<{ id: string; title: string }>
    }
    expect(list.sessions.find((s) => s.id === owner.sessionId)?.title).toBe('holiday photo.png')
    const empty = await routes.push(owner.sessionId, owner.cookie, message('m2', '  ', []))
    expect(empty.status).toBe(400)
    expect(((await empty.json()) as { error: { code: string } }).error.code).toBe('invalid_payload')
  })

  it("a message naming another's file, or a file otherwise than uploaded, is refused and writes nothing", async () => {
    const owner = await routes.newUser()
    const other = await routes.newUser()
    const theirs = await uploaded(other.cookie, png(), 'theirs.png')
    const refused = await routes.push(owner.sessionId, owner.cookie, message('m1', 'steal', [theirs]))
    expect(refused.status).toBe(422)
    const mine = await uploaded(owner.cookie, png(), 'mine.png')
    expect((await routes.push(owner.sessionId, owner.cookie, message('m2', 'lie', [{ ...mine, size: mine.size + 1 }]))).status).toBe(422)
    expect((await routes.push(owner.sessionId, owner.cookie, message('m3', 'lie', [{ ...mine, name: 'other.png' }]))).status).toBe(422)
    const snapshot = await (await routes.call('GET', `/api/sessions/${owner.sessionId}/snapshot`, { cookie: owner.cookie })).text()
    expect(snapshot).not.toContain('steal')
    expect(snapshot).not.toContain('lie')
    // More files than a message may carry (A2_MAX_FILES_PER_MESSAGE, 8 by default).
    const nine = await Promise.all(Array.from({ length: 9 }, (_, i) => uploaded(owner.cookie, png(i + 1, 1), `n${i}.png`)))
    const tooMany = await routes.push(owner.sessionId, owner.cookie, message('m9', 'many', nine))
    expect(tooMany.status).toBe(422)
    expect(((await tooMany.json()) as { error: { code: string } }).error.code).toBe('limit_reached')
    // A file bound to one chat is not another's to name.
    expect((await routes.push(owner.sessionId, owner.cookie, message('m4', 'ok', [mine]))).status).toBe(201)
    const second = await routes.call('POST', '/api/sessions', { cookie: owner.cookie, body: '{}' })
    const { session } = (await second.json()) as { session: { id: string } }
    expect((await routes.push(session.id, owner.cookie, message('m5', 'again', [mine]))).status).toBe(422)
  })

  it('uploads no message names are swept; named ones stay', async () => {
    const owner = await routes.newUser()
    const named = await uploaded(owner.cookie, png(), 'keep.png')
    expect((await routes.push(owner.sessionId, owner.cookie, message('m1', 'keep', [named]))).status).toBe(201)
    const loose = await uploaded(owner.cookie, png(3, 3), 'loose.png')
    const service = await files()
    expect(await service.sweepUnreferenced(60 * 60 * 1000)).toBe(0) // too young
    expect(await service.sweepUnreferenced(0)).toBeGreaterThanOrEqual(1)
    const { blobs } = await service.census()
    expect(blobs).toContain(named.id)
    expect(blobs).not.toContain(loose.id)
    expect((await routes.call('GET', `/api/files/${loose.id}`, { cookie: owner.cookie })).status).toBe(404)
  })

  it("past the quota an upload is a 413 and nothing is stored: a guest's quota, then (signed up) the account's", async () => {
    const owner = await routes.newUser()
    const big = text('q'.repeat(MAX_FILE_BYTES - 1))
    /** Uploads `big` until refused: how many were stored. */
    const fill = async (cookie: string) => {
      let response = await upload(cookie, big, 'fill.txt')
      let stored = 0
      for (; response.status === 201; stored++) response = await upload(cookie, big, 'fill.txt')
      expect(response.status).toBe(413)
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('quota_exceeded')
      return stored
    }
    expect(await fill(owner.cookie)).toBe(Math.floor(GUEST_QUOTA / big.length))
    // An account has its own, larger quota; what it adopted from its guest counts against it.
    const { cookie } = await signUp(owner.cookie, `quota-${kind}-${backend}@example.com`)
    expect(await fill(cookie)).toBe(Math.floor(ACCOUNT_QUOTA / big.length) - Math.floor(GUEST_QUOTA / big.length))
    const census = await (await files()).census()
    expect(census.blobs.length).toBe(census.rows)
  })

  it("deleting the account deletes every file of it, rows and bytes (a guest's files moved to the account first)", async () => {
    const guest = await routes.newUser()
    const named = await uploaded(guest.cookie, png(), 'mine.png')
    expect((await routes.push(guest.sessionId, guest.cookie, message('m1', 'keep', [named]))).status).toBe(201)
    const loose = await uploaded(guest.cookie, pdf(1), 'loose.pdf')
    const { cookie } = await signUp(guest.cookie, `files-${kind}-${backend}@example.com`)
    // The account owns what the guest uploaded, on every device.
    expect((await routes.call('GET', `/api/files/${named.id}`, { cookie })).status).toBe(200)
    expect((await routes.call('GET', `/api/files/${loose.id}`, { cookie })).status).toBe(200)

    expect((await routes.call('POST', '/api/auth/delete-user', { cookie, body: '{}' })).status).toBe(200)
    const { blobs } = await (await files()).census()
    expect(blobs).not.toContain(named.id)
    expect(blobs).not.toContain(loose.id)
    expect(await (await files()).byIds([named.id, loose.id])).toEqual([])
  }, 120_000) // a sign-up and a sign-in hash with scrypt: tens of seconds on PGlite on a busy machine (accounts.test.ts)

  it('every hostile upload is a typed 4xx and stores nothing (fast-check)', async () => {
    const owner = await routes.newUser()
    const bytes = (min: number, max: number) => fc.uint8Array({ minLength: min, maxLength: max })
    const hostile = fc.oneof(
      fc
        .record({
          what: fc.constant('wrong magic bytes'),
          magic: fc.constantFrom(
            [0x7f, 0x45, 0x4c, 0x46],
            [0x50, 0x4b, 0x03, 0x04],
            [0x1f, 0x8b, 0x08],
            [0x4d, 0x5a, 0x90, 0x00],
            [0xff, 0xfe, 0x00, 0xc3, 0x28],
          ),
          rest: bytes(64, 512),
        })
        .map(({ what, magic, rest }) => ({ what, body: new Uint8Array([...magic, ...rest]), name: 'innocent.png', raw: undefined, status: 415 })),
      fc.constant({ what: 'zero bytes', body: new Uint8Array(), name: 'empty.txt', raw: undefined, status: 422 }),
      fc.record({ which: fc.constantFrom('png', 'pdf'), cut: fc.double({ min: 0.05, max: 0.95, noNaN: true }) }).map(({ which, cut }) => {
        const whole = which === 'png' ? png(16, 16) : pdf(2)
        return {
          what: 'truncated',
          body: whole.slice(0, Math.max(16, Math.floor(whole.length * cut))),
          name: `cut.${which}`,
          raw: undefined,
          status: 422,
        }
      }),
      fc
        .integer({ min: 1, max: 4096 })
        .map((extra) => ({ what: 'huge', body: text('h'.repeat(MAX_FILE_BYTES + extra)), name: 'huge.txt', raw: undefined, status: 413 })),
      fc
        .oneof(
          fc.string().map((s) => `../${s}`),
          fc.string().map((s) => `a/${s}..\\b`),
          fc.string().map((s) => `evil${s}\u0000.png`),
          fc.constantFrom('\u202Egnp.exe', 'x\u2066y.png', 'tab\there.png', 'del\u007f.png', '.', '..', ' ', 'a'.repeat(256)),
        )
        .map((name) => ({ what: 'hostile name', body: png(), name, raw: undefined, status: 422 })),
      fc
        .constantFrom('%ED%A0%80.png', 'x%ED%B0%80', '%C3', '%E2%80%AEgnp.exe', '%2E%2E%2Fpasswd')
        .map((raw) => ({ what: 'lone surrogate or bad encoding', body: png(), name: null, raw, status: 422 })),
      fc.constant({ what: 'no name', body: png(), name: null, raw: undefined, status: 422 }),
    )
    const before = await (await files()).census()
    await fc.assert(
      fc.asyncProperty(hostile, async ({ what, body, name, raw, status }) => {
        const response = await upload(owner.cookie, body, name, raw)
        expect(response.status, `${what}: ${JSON.stringify(name ?? raw)}`).toBe(status)
        const { error } = (await response.json()) as { error: { code: string } }
        expect(typeof error.code).toBe('string')
      }),
      { seed: 38, numRuns: 60 },
    )
    const after = await (await files()).census()
    expect(after.rows).toBe(before.rows)
    expect(after.blobs.sort()).toEqual(before.blobs.sort())
  }, 120_000)

  it('a streamed body past the cap is cut off at the cap (413), and one the client abandons stores nothing', async () => {
    const owner = await routes.newUser()
    const before = await (await files()).census()
    let sent = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 16 * 1024
        controller.enqueue(new Uint8Array(16 * 1024).fill(0x61))
      },
    })
    expect((await upload(owner.cookie, endless, 'endless.txt')).status).toBe(413)
    expect(sent).toBeLessThan(MAX_FILE_BYTES * 4)
    const half = png(32, 32)
    const abandoned = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(half.slice(0, 100))
        controller.error(new Error('the tab closed'))
      },
    })
    const cut = await upload(owner.cookie, abandoned, 'half.png')
    expect(cut.status).toBe(422)
    expect(((await cut.json()) as { error: { code: string } }).error.code).toBe('truncated_file')
    // The same with its length declared, as a browser's: what had arrived was already being stored, and goes.
    const declared = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(half.slice(0, 100))
        controller.error(new Error('the tab closed'))
      },
    })
    const headers = { 'content-type': 'application/octet-stream', 'x-file-name': 'half.png', 'content-length': String(half.length) }
    const cutDeclared = await routes.call('POST', '/api/files', { cookie: owner.cookie, body: declared, headers })
    expect(cutDeclared.status).toBe(422)
    // A body that ends short of its Content-Length was cut off too, even when what came is a whole file.
    const short = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(half)
        controller.close()
      },
    })
    const cutShort = await routes.call('POST', '/api/files', {
      cookie: owner.cookie,
      body: short,
      headers: { ...headers, 'content-length': String(half.length + 10) },
    })
    expect(cutShort.status).toBe(422)
    expect(((await cutShort.json()) as { error: { code: string } }).error.code).toBe('truncated_file')
    const after = await (await files()).census()
    expect(after.rows).toBe(before.rows)
    expect(after.blobs.sort()).toEqual(before.blobs.sort())
  })

  it('a body that stops arriving (a slow drip, a stalled client) is a 408 after A2_BODY_TIMEOUT_MS, and stores nothing', async () => {
    const owner = await routes.newUser()
    const before = await (await files()).census()
    let cancelled = false
    const stalled = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(text('the first line, then nothing\n'))
      },
      cancel() {
        cancelled = true
      },
    })
    const response = await upload(owner.cookie, stalled, 'stalled.txt')
    expect(response.status).toBe(408)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('upload_timeout')
    expect(cancelled).toBe(true)
    const after = await (await files()).census()
    expect(after.rows).toBe(before.rows)
  })
})
