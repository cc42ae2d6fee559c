/**
 * Chat management over HTTP: DELETE /api/sessions/:id really deletes (the log, jobs, their
 * transitions and effects), only for the owner, and stops a running answer first;
 * GET /api/sessions?q= finds my chats by title and message text, bounded; the list marks
 * chats still generating.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'
import { query } from '@/lib/a2/testing'

describe.each(layers)('chat management routes on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({ databaseUrl: kind === 'postgres' ? testDb.url : undefined })
  })
  afterAll(async () => {
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
  })

  // A same-origin browser fetch (the CSRF check wants JSON and our Origin even with no body).
  const del = (id: string, cookie: string) =>
    routes.call('DELETE', `/api/sessions/${id}`, { cookie, headers: { 'content-type': 'application/json' } })
  const list = async (cookie: string, query = '') => {
    const response = await routes.call('GET', `/api/sessions${query}`, { cookie })
    return {
      status: response.status,
      body: (await response.json()) as {
        sessions: Array<{ id: string; title: string; generating?: boolean; unresolved?: boolean; snippet?: string; matchId?: string }>
        error?: { code: string }
      },
    }
  }
  const send = async (id: string, cookie: string, text: string, generate = false) => {
    const events: unknown[] = [{ id: `m${Math.random().toString(36).slice(2)}`, type: 'message', payload: { text } }]
    const response = await routes.push(id, cookie, JSON.stringify({ events }))
    expect(response.status).toBe(201)
    const [message] = ((await response.json()) as { events: Array<{ id: string }> }).events
    if (!generate) return message.id
    const asked = await routes.push(id, cookie, JSON.stringify({ type: 'generate', payload: { for: message.id } }))
    expect(asked.status).toBe(201)
  }
  const rows = async (id: string) => {
    const { server } = await routes.chatServer.getChatServer()
    const [counts] = await query<Record<string, number>>(
      server.store.db,
      sql`
      select (select count(*)::int from a2_sessions where id = ${id}) as sessions,
             (select count(*)::int from a2_events where session_id = ${id}) as events,
             (select count(*)::int from a2_jobs where session_id = ${id}) as jobs,
             (select count(*)::int from a2_job_transitions where job_id in (select id from a2_jobs where session_id = ${id})) as transitions,
             (select count(*)::int from a2_effects where job_id in (select id from a2_jobs where session_id = ${id})) as effects`,
    )
    return counts
  }

  it('deletes the session with its log, jobs, transitions and effects; the id is gone afterwards', async () => {
    const user = await routes.newUser()
    const other = await routes.newUser()
    await send(user.sessionId, user.cookie, 'a chat to delete', true)
    await send(other.sessionId, other.cookie, 'a chat to keep', true)
    // A settled run with its history and an effect, as the worker would leave them.
    const { server } = await routes.chatServer.getChatServer()
    const jobIds = async (sessionId: string) =>
      (await query<{ id: number }>(server.store.db, sql`select id from a2_jobs where session_id = ${sessionId}`)).map((r) => Number(r.id))
    for (const sessionId of [user.sessionId, other.sessionId]) {
      for (const jobId of await jobIds(sessionId)) {
        await server.store.db.execute(sql`update a2_jobs set status = 'COMPLETED' where id = ${jobId}`)
        await server.store.db.execute(
          sql`insert into a2_job_transitions (job_id, attempt, from_status, to_status, reason) values (${jobId}, 1, 'ACTIVE', 'COMPLETED', 'RETURNED')`,
        )
        await server.store.db.execute(sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${jobId}, 'k', 'DONE', 1, 0)`)
      }
    }
    const otherBefore = await rows(other.sessionId)
    expect(await rows(user.sessionId)).toMatchObject({ sessions: 1, events: 2, jobs: 1, transitions: 1, effects: 1 })
    // The job ids the delete must clean up after (a2_effects and transitions have no foreign key).
    const deletedJobs = await jobIds(user.sessionId)

    const response = await del(user.sessionId, user.cookie)
    expect(response.status).toBe(204)

    expect(await rows(user.sessionId)).toEqual({ sessions: 0, events: 0, jobs: 0, transitions: 0, effects: 0 })
    const [left] = await query<Record<string, number>>(
      server.store.db,
      sql`
      select (select count(*)::int from a2_job_transitions where job_id in ${deletedJobs}) as transitions,
             (select count(*)::int from a2_effects where job_id in ${deletedJobs}) as effects`,
    )
    expect(left).toEqual({ transitions: 0, effects: 0 })
    // Someone else's chat is untouched.
    expect(await rows(other.sessionId)).toEqual(otherBefore)
    // Gone: reading it is a 404, deleting again is a 404, the list no longer has it.
    const get = await routes.call('GET', `/api/sessions/${user.sessionId}`, { cookie: user.cookie })
    expect(get.status).toBe(404)
    expect((await del(user.sessionId, user.cookie)).status).toBe(404)
    expect((await list(user.cookie)).body.sessions.map((s) => s.id)).not.toContain(user.sessionId)
  })

  it("refuses someone else's chat as not found, a malformed id as a bad request, and deletes nothing", async () => {
    const alice = await routes.newUser()
    const mallory = await routes.newUser()
    await send(alice.sessionId, alice.cookie, 'mine')
    const before = await rows(alice.sessionId)

    const theirs = await del(alice.sessionId, mallory.cookie)
    expect(theirs.status).toBe(404)
    expect(((await theirs.json()) as { error: { code: string } }).error.code).toBe('not_found')
    const malformed = await del('not-a-uuid', alice.cookie)
    expect(malformed.status).toBe(400)
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe('bad_request')
    expect((await del(alice.sessionId, '')).status).toBe(401)
    expect(await rows(alice.sessionId)).toEqual(before)
  })

  it('refuses to delete a chat whose call an operator has yet to settle (an UNKNOWN effect): 409 unresolved, nothing written or deleted', async () => {
    const user = await routes.newUser()
    await send(user.sessionId, user.cookie, 'a call left unknown', true)
    const { server } = await routes.chatServer.getChatServer()
    // A second answer waits behind it in the lane: a delete that went ahead would append its Stop.
    await send(user.sessionId, user.cookie, 'and another', true)
    const [job] = await query<{ id: number }>(server.store.db, sql`select id from a2_jobs where session_id = ${user.sessionId} order by id limit 1`)
    await server.store.db.execute(sql`update a2_jobs set status = 'UNKNOWN', attempt = 1 where id = ${Number(job.id)}`)
    await server.store.db.execute(
      sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${Number(job.id)}, 'model', 'UNKNOWN', 1, 0)`,
    )
    const before = await rows(user.sessionId)

    const refused = await del(user.sessionId, user.cookie)
    expect(refused.status).toBe(409)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unresolved')
    expect(await rows(user.sessionId)).toEqual(before)
    // The list says so, so the sidebar refuses before it shows an undo for a delete that cannot happen.
    const listed = (await list(user.cookie)).body.sessions
    expect(listed.find((s) => s.id === user.sessionId)?.unresolved).toBe(true)
    const other = await routes.newUser()
    await send(other.sessionId, other.cookie, 'nothing unknown here')
    expect((await list(other.cookie)).body.sessions.find((s) => s.id === other.sessionId)).not.toHaveProperty('unresolved')
  })

  it('stops a running answer before deleting: its Stop is appended, so the worker’s signal fires', async () => {
    const user = await routes.newUser()
    await send(user.sessionId, user.cookie, 'a running answer', true)
    const { server } = await routes.chatServer.getChatServer()
    // No worker in this process: the run stays ACTIVE until the Stop moves it to CANCELLING.
    const seen: string[] = []
    const original = server.append.bind(server)
    server.append = (async (sessionId: string, ...inputs: Array<{ type: string }>) => {
      if (sessionId === user.sessionId) seen.push(...inputs.map((i) => i.type))
      return original(sessionId, ...(inputs as Parameters<typeof original>[1][]))
    }) as typeof server.append
    try {
      expect((await del(user.sessionId, user.cookie)).status).toBe(204)
    } finally {
      server.append = original
    }
    expect(seen).toEqual(['cancelled'])
    expect(await rows(user.sessionId)).toMatchObject({ sessions: 0, jobs: 0 })
  })

  it('searches my chats by title and by message text, case-insensitively, and only mine', async () => {
    const alice = await routes.newUser()
    const bob = await routes.newUser()
    await send(alice.sessionId, alice.cookie, 'Planning the Lisbon trip')
    const museums = await send(alice.sessionId, alice.cookie, 'Which museums open on Mondays?')
    const { server } = await routes.chatServer.getChatServer()
    const second = await server.sessions.create(alice.userId)
    await send(second.id, alice.cookie, 'Sourdough starter ratios')
    await send(bob.sessionId, bob.cookie, 'Lisbon for Bob')

    const byTitle = await list(alice.cookie, '?q=lisbon')
    expect(byTitle.status).toBe(200)
    expect(byTitle.body.sessions.map((s) => s.id)).toEqual([alice.sessionId])

    const byText = await list(alice.cookie, '?q=' + encodeURIComponent('MUSEUMS open'))
    expect(byText.body.sessions.map((s) => s.id)).toEqual([alice.sessionId])
    expect(byText.body.sessions[0].snippet).toContain('museums open on Mondays')
    // Where the chat opens: the message that matched.
    expect(byText.body.sessions[0].matchId).toBe(museums)

    // LIKE's wildcards are plain characters here.
    expect((await list(alice.cookie, '?q=%25')).body.sessions).toEqual([])
    expect((await list(alice.cookie, '?q=_')).body.sessions).toEqual([])
    expect((await list(alice.cookie, '?q=nothing-matches-this')).body.sessions).toEqual([])
  })

  it('answers a bad search with a typed 400', async () => {
    const user = await routes.newUser()
    const long = await list(user.cookie, '?q=' + 'x'.repeat(201))
    expect(long.status).toBe(400)
    expect(long.body.error?.code).toBe('bad_request')
    const empty = await list(user.cookie, '?q=%20%20')
    expect(empty.status).toBe(400)
  })

  it('marks chats with an answer still being written as generating', async () => {
    const user = await routes.newUser()
    const { server } = await routes.chatServer.getChatServer()
    const idle = await server.sessions.create(user.userId)
    await send(idle.id, user.cookie, 'nothing running here')
    await send(user.sessionId, user.cookie, 'an answer is queued', true)
    const { body } = await list(user.cookie)
    const flags = Object.fromEntries(body.sessions.map((s) => [s.id, s.generating ?? false]))
    expect(flags).toEqual({ [user.sessionId]: true, [idle.id]: false })
  })
})
