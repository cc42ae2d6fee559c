/**
 * Figure 14 — attachments, over HTTP against the app's API on a process of its own
 * (`app-child.ts`: the route handlers behind node:http, its database the bench's):
 *
 * - **A 10 MB upload**: client send → 201, of a photo-like PNG just under A2_MAX_FILE_BYTES
 *   (every check the app makes: the identity, the body read to its cap, the type sniffed, the
 *   hash, the thumbnail, the row and the bytes in the database). Baseline, same run, same bytes,
 *   alternated with ours: a bare node:http server that reads the body and answers 201.
 * - **Opening a chat of 20 photos** (in messages of 8, the most one carries): what the page loads (the snapshot, then each photo's
 *   thumbnail, six at a time as a browser does), bytes and time, beside the same chat without
 *   them; and what it would load with the originals instead of thumbnails.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { spawnChild, type Child } from '../lib/children'
import { summarize, type Summary } from '../lib/stats'

export interface UploadFigure {
  uploadBytes: number
  /** client send → 201, ms */
  ours: Summary
  bare: Summary
  chat: {
    photos: number
    /** The page's requests for the chat: the snapshot and the thumbnails. */
    withThumbs: { bytes: number; ms: Summary }
    /** The same, were the originals loaded instead of thumbnails. */
    withOriginals: { bytes: number; ms: Summary }
    /** The same chat's text without the photos: the snapshot alone. */
    without: { bytes: number; ms: Summary }
  }
}

const MAX_FILE_BYTES = 10 * 1024 * 1024
const PHOTOS = 20
const PARALLEL = 6 // a browser's connections to one origin (HTTP/1.1)

/** A photo-like PNG (noise compresses as badly as a photo) of about `side`² × 3 bytes. */
async function noisyPng(side: number): Promise<Uint8Array> {
  const { default: sharp } = await import('sharp')
  const png = await sharp({
    create: { width: side, height: side, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } },
  })
    .png({ compressionLevel: 1 })
    .toBuffer()
  return new Uint8Array(png)
}

/** The largest noisy PNG under the cap, from a side that overshoots, shrinking 5% a step. */
async function photoUnderCap(): Promise<Uint8Array> {
  for (let side = 1900; side > 100; side = Math.floor(side * 0.95)) {
    const png = await noisyPng(side)
    if (png.byteLength < MAX_FILE_BYTES) return png
  }
  throw new Error('no PNG under the cap')
}

/** The bare baseline: reads a body whole and answers 201. */
function bareServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.on('data', () => {})
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json' })
      res.end('{}')
    })
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((done) => server.close(() => done())) }),
    ),
  )
}

function browser(appUrl: string) {
  const sameOrigin = { origin: appUrl, 'sec-fetch-site': 'same-origin' }
  const fetchBytes = async (url: string, cookie: string) => {
    const response = await fetch(url, { headers: { cookie } })
    const bytes = (await response.arrayBuffer()).byteLength
    if (!response.ok) throw new Error(`${url} answered ${response.status}`)
    return bytes
  }
  return {
    async newChat(): Promise<{ cookie: string; sessionId: string }> {
      const identity = await fetch(`${appUrl}/api/sessions`, { headers: { 'sec-fetch-site': 'same-origin' } })
      await identity.arrayBuffer()
      const cookie = identity.headers.get('set-cookie')!.split(';')[0]
      const created = await fetch(`${appUrl}/api/sessions`, {
        method: 'POST',
        headers: { ...sameOrigin, cookie, 'content-type': 'application/json' },
        body: '{}',
      })
      const { session } = (await created.json()) as { session: { id: string } }
      return { cookie, sessionId: session.id }
    },
    /** The file's reference, as a message names it. */
    async upload(cookie: string, bytes: Uint8Array, name: string): Promise<{ id: string }> {
      const response = await fetch(`${appUrl}/api/files`, {
        method: 'POST',
        headers: { ...sameOrigin, cookie, 'content-type': 'application/octet-stream', 'x-file-name': name },
        body: new Blob([bytes as Uint8Array<ArrayBuffer>]),
      })
      if (response.status !== 201) throw new Error(`upload answered ${response.status}: ${await response.text()}`)
      return ((await response.json()) as { file: { id: string } }).file // id, name, mediaType, size, sha256
    },
    async message(cookie: string, sessionId: string, text: string, files: unknown[]): Promise<void> {
      const response = await fetch(`${appUrl}/api/sessions/${sessionId}/events`, {
        method: 'POST',
        headers: { ...sameOrigin, cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ events: [{ type: 'message', payload: files.length ? { text, files } : { text } }] }),
      })
      if (response.status !== 201) throw new Error(`message answered ${response.status}: ${await response.text()}`)
    },
    /** What the page loads to open the chat: the snapshot, then `images` six at a time. Bytes and ms. */
    async open(cookie: string, sessionId: string, images: string[]): Promise<{ bytes: number; ms: number }> {
      const start = performance.now()
      let bytes = await fetchBytes(`${appUrl}/api/sessions/${sessionId}/snapshot`, cookie)
      const queue = [...images]
      await Promise.all(
        Array.from({ length: PARALLEL }, async () => {
          for (let url = queue.shift(); url; url = queue.shift()) bytes += await fetchBytes(url, cookie)
        }),
      )
      return { bytes, ms: performance.now() - start }
    },
  }
}

export async function uploadFigure(options: { databaseUrl: string; rounds: number; say: (line: string) => void }): Promise<UploadFigure> {
  const photo = await photoUnderCap()
  options.say(`  a ${(photo.byteLength / 1e6).toFixed(1)} MB PNG, ${options.rounds} uploads each way`)
  let app: Child | undefined
  const bare = await bareServer()
  try {
    app = await spawnChild('app-child.ts', [], {
      env: {
        BENCH_DB_URL: options.databaseUrl,
        BENCH_UPSTREAM_URL: 'http://127.0.0.1:9/v1', // no answer is asked for
        PGAPPNAME: 'a2-bench-uploads',
        // One guest uploads every round: room and pace for all of them.
        A2_FILE_QUOTA_BYTES_PER_GUEST: String(10 * 1024 * 1024 * 1024),
        A2_RATE_PUSHES_PER_MIN: '100000',
      },
    })
    const client = browser(app.ready.url as string)
    const { cookie, sessionId } = await client.newChat()
    await client.upload(cookie, photo, 'warm-up.png')
    const ours: number[] = []
    const baseline: number[] = []
    for (let round = 0; round < options.rounds; round++) {
      let start = performance.now()
      await client.upload(cookie, photo, `photo-${round}.png`)
      ours.push(performance.now() - start)
      start = performance.now()
      const response = await fetch(bare.url, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: new Blob([photo as Uint8Array<ArrayBuffer>]),
      })
      await response.arrayBuffer()
      baseline.push(performance.now() - start)
    }

    // A chat of 20 photos (~0.5 MB each, as phone photos saved for the web are), and the same words in a chat without them.
    const small = await noisyPng(400)
    const refs = []
    for (let i = 0; i < PHOTOS; i++) refs.push(await client.upload(cookie, small, `holiday-${i}.png`))
    const plain = await client.newChat()
    // A2_MAX_FILES_PER_MESSAGE is 8: the photos go in messages of 8, and the plain chat has the same messages' words.
    for (let i = 0; i < refs.length; i += 8) {
      await client.message(cookie, sessionId, `Our holiday, part ${i / 8 + 1}`, refs.slice(i, i + 8))
      await client.message(plain.cookie, plain.sessionId, `Our holiday, part ${i / 8 + 1}`, [])
    }
    const thumbs = refs.map((ref) => `${app!.ready.url}/api/files/${ref.id}?thumb=1`)
    const originals = refs.map((ref) => `${app!.ready.url}/api/files/${ref.id}`)
    type Opened = Array<{ bytes: number; ms: number }>
    const runs: { withThumbs: Opened; withOriginals: Opened; without: Opened } = { withThumbs: [], withOriginals: [], without: [] }
    for (let round = 0; round < options.rounds; round++) {
      runs.withThumbs.push(await client.open(cookie, sessionId, thumbs))
      runs.withOriginals.push(await client.open(cookie, sessionId, originals))
      runs.without.push(await client.open(plain.cookie, plain.sessionId, []))
    }
    const of = (list: Opened) => ({ bytes: list[0].bytes, ms: summarize(list.map((r) => r.ms)) })
    return {
      uploadBytes: photo.byteLength,
      ours: summarize(ours),
      bare: summarize(baseline),
      chat: { photos: PHOTOS, withThumbs: of(runs.withThumbs), withOriginals: of(runs.withOriginals), without: of(runs.without) },
    }
  } finally {
    await app?.stop()
    await bare.close()
  }
}
