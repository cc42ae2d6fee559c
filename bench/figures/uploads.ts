/**
 * Figure 15 — attachments, over HTTP against the app's API on a process of its own
 * (`app-child.ts`: the route handlers behind node:http, its database the bench's):
 *
 * - **A 10 MB upload**: client send → 201, of a photo-like PNG just under A2_MAX_FILE_BYTES
 *   (every check the app makes: the identity, the body read to its cap, the type sniffed, the
 *   hash, the thumbnail, the row and the bytes), to the app with its bytes in the database
 *   (`file_bytes`) and to a second app process with its bytes in a real S3-compatible server
 *   (s3rver on a process of its own, `s3-child.ts`). Baseline, same run, same bytes, alternated
 *   with ours: a bare node:http server that reads the body and answers 201. Beside them, the
 *   floor each back end puts under the app: the same bytes inserted raw into a `bytea` column
 *   stored as `file_bytes` is (from this process, postgres-js), and put raw into s3rver.
 * - **Opening a chat of 20 photos** (in messages of 8, the most one carries): what the page loads (the snapshot, then each photo's
 *   thumbnail, six at a time as a browser does), bytes and time, beside the same chat without
 *   them; and what it would load with the originals instead of thumbnails.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import postgres from 'postgres'
import { spawnChild, type Child } from '../lib/children'
import { summarize, type Summary } from '../lib/stats'

export interface UploadFigure {
  uploadBytes: number
  /** client send → 201, ms */
  ours: Summary
  /** The same, the app's bytes in s3rver. */
  oursS3: Summary
  bare: Summary
  /** The same bytes, one raw INSERT into a `bytea` column stored EXTERNAL, as `file_bytes` is. */
  rawInsert: Summary
  /** The same bytes, one raw PutObject into s3rver. */
  rawPut: Summary
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

/** The floors under each back end: the same bytes written raw, into Postgres and into s3rver, from this process. */
async function rawWriters(databaseUrl: string, s3Env: Record<string, string>) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  await sql`create table if not exists bench_raw_file_bytes (id text primary key, bytes bytea not null)`
  await sql`alter table bench_raw_file_bytes alter column bytes set storage external`
  const s3 = await import('@aws-sdk/client-s3')
  const client = new s3.S3Client({
    region: s3Env.A2_S3_REGION,
    endpoint: s3Env.A2_S3_ENDPOINT,
    forcePathStyle: true,
    credentials: { accessKeyId: s3Env.A2_S3_ACCESS_KEY_ID, secretAccessKey: s3Env.A2_S3_SECRET_ACCESS_KEY },
  })
  let n = 0
  return {
    insert: async (bytes: Uint8Array) => void (await sql`insert into bench_raw_file_bytes values (${`raw-${n++}`}, ${Buffer.from(bytes)})`),
    put: async (bytes: Uint8Array) =>
      void (await client.send(
        new s3.PutObjectCommand({ Bucket: s3Env.A2_S3_BUCKET, Key: `raw/${n++}`, Body: bytes, ContentLength: bytes.byteLength }),
      )),
    async close() {
      await sql`drop table bench_raw_file_bytes`
      await sql.end()
      client.destroy()
    },
  }
}

export async function uploadFigure(options: { databaseUrl: string; rounds: number; say: (line: string) => void }): Promise<UploadFigure> {
  const photo = await photoUnderCap()
  options.say(`  a ${(photo.byteLength / 1e6).toFixed(1)} MB PNG, ${options.rounds} uploads each way`)
  const children: Child[] = []
  const bare = await bareServer()
  let raw: Awaited<ReturnType<typeof rawWriters>> | undefined
  try {
    const appEnv = {
      BENCH_DB_URL: options.databaseUrl,
      BENCH_UPSTREAM_URL: 'http://127.0.0.1:9/v1', // no answer is asked for
      PGAPPNAME: 'a2-bench-uploads',
      // One guest uploads every round: room and pace for all of them.
      A2_FILE_QUOTA_BYTES_PER_GUEST: String(10 * 1024 * 1024 * 1024),
      A2_RATE_PUSHES_PER_MIN: '100000',
    }
    const s3 = await spawnChild('s3-child.ts', [])
    children.push(s3)
    const app = await spawnChild('app-child.ts', [], { env: appEnv })
    children.push(app)
    const appS3 = await spawnChild('app-child.ts', [], { env: { ...appEnv, ...(s3.ready.env as Record<string, string>) } })
    children.push(appS3)
    raw = await rawWriters(options.databaseUrl, s3.ready.env as Record<string, string>)
    const client = browser(app.ready.url as string)
    const clientS3 = browser(appS3.ready.url as string)
    const { cookie, sessionId } = await client.newChat()
    const s3Chat = await clientS3.newChat()
    await client.upload(cookie, photo, 'warm-up.png')
    await clientS3.upload(s3Chat.cookie, photo, 'warm-up.png')
    await raw.insert(photo)
    await raw.put(photo)
    const timed = async (samples: number[], fn: () => Promise<unknown>) => {
      const start = performance.now()
      await fn()
      samples.push(performance.now() - start)
    }
    const samples = { ours: [] as number[], oursS3: [] as number[], bare: [] as number[], rawInsert: [] as number[], rawPut: [] as number[] }
    for (let round = 0; round < options.rounds; round++) {
      await timed(samples.ours, () => client.upload(cookie, photo, `photo-${round}.png`))
      await timed(samples.oursS3, () => clientS3.upload(s3Chat.cookie, photo, `photo-${round}.png`))
      await timed(samples.bare, async () => {
        const response = await fetch(bare.url, {
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream' },
          body: new Blob([photo as Uint8Array<ArrayBuffer>]),
        })
        await response.arrayBuffer()
      })
      await timed(samples.rawInsert, () => raw!.insert(photo))
      await timed(samples.rawPut, () => raw!.put(photo))
    }
    const p50 = (list: number[]) => summarize(list).p50.toFixed(0)
    options.say(`  the same bytes raw: INSERT ${p50(samples.rawInsert)} ms, PutObject into s3rver ${p50(samples.rawPut)} ms (p50)`)

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
    const thumbs = refs.map((ref) => `${app.ready.url}/api/files/${ref.id}?thumb=1`)
    const originals = refs.map((ref) => `${app.ready.url}/api/files/${ref.id}`)
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
      ours: summarize(samples.ours),
      oursS3: summarize(samples.oursS3),
      bare: summarize(samples.bare),
      rawInsert: summarize(samples.rawInsert),
      rawPut: summarize(samples.rawPut),
      chat: { photos: PHOTOS, withThumbs: of(runs.withThumbs), withOriginals: of(runs.withOriginals), without: of(runs.without) },
    }
  } finally {
    await raw?.close()
    for (const child of children.reverse()) await child.stop()
    await bare.close()
  }
}
