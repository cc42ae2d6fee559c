/**
 * The operator role (finding 6): runs across users and settling UNKNOWN effects are for
 * operators only (a token, or an allow-listed user id, checked on the server), every
 * resolution is audited, and an end user sees their own runs at most, without worker ids.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'drizzle-orm'
import { loadRoutes } from '@/test/routes'
import { createTestDb, layers, type TestDb } from '@/test/db'
import type { ChatEvent } from '@/lib/chat/contract'
import { foldChat, type AnswerTurn } from '@/lib/chat/fold/reducer'

const TOKEN = 'operator-token-for-tests-0123456789abcdef'

describe.each(layers)('the operator role on %s', (kind) => {
  let testDb: TestDb
  let routes: Awaited<ReturnType<typeof loadRoutes>>

  beforeAll(async () => {
    testDb = await createTestDb(kind)
    routes = await loadRoutes({ databaseUrl: kind === 'postgres' ? testDb.url : undefined, env: { A2_OPERATOR_TOKEN: TOKEN } })
  })
  afterAll(async () => {
    delete process.env.A2_OPERATOR_TOKEN
    delete process.env.A2_OPERATOR_USER_IDS
    await routes.chatServer.shutdownChatServer()
    await testDb.drop()
  })

  async function rows(statement: ReturnType<typeof sql>): Promise<Array<Record<string, unknown>>> {
    const { server } = await routes.chatServer.getChatServer()
    const result = (await server.store.db.execute(statement)) as unknown
    return (Array.isArray(result) ? result : (result as { rows: Array<Record<string, unknown>> }).rows) as Array<Record<string, unknown>>
  }

  /** A user with one run whose model call a dead worker left UNKNOWN (as the runtime records it). */
  async function userWithUnknownRun() {
    const user = await routes.newUser()
    const body = JSON.stringify({
      events: [
        { id: 'm', type: 'message', payload: { text: 'hi' } },
        { id: 'g', type: 'generate', payload: { for: 'm' } },
      ],
    })
    expect((await routes.push(user.sessionId, user.cookie, body)).status).toBe(201)
    const [job] = await rows(sql`select id from a2_jobs where session_id = ${user.sessionId}`)
    const jobId = Number(job.id)
    await rows(sql`update a2_jobs set status = 'UNKNOWN', attempt = 1, owner = 'worker-host:4242' where id = ${jobId}`)
    await rows(sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${jobId}, 'model', 'UNKNOWN', 1, 0)`)
    return { ...user, jobId }
  }

  const bearer = { authorization: `Bearer ${TOKEN}` }
  const verdict = JSON.stringify({ done: false })

  it('an end user sees only their own runs, without worker ids, and cannot settle an effect, even their own', async () => {
    const alice = await userWithUnknownRun()
    const mallory = await userWithUnknownRun()

    const list = (await (await routes.call('GET', '/api/runs', { cookie: alice.cookie })).json()) as {
      operator: boolean
      runs: Array<Record<string, unknown>>
    }
    expect(list.operator).toBe(false)
    expect(list.runs.map((r) => r.id)).toEqual([alice.jobId])
    expect(list.runs[0]).not.toHaveProperty('owner')
    expect(JSON.stringify(list)).not.toContain('worker-host')
    expect((await routes.call('GET', '/api/runs?scope=all', { cookie: alice.cookie })).status).toBe(403)

    const own = await routes.call('GET', `/api/runs/${alice.jobId}`, { cookie: alice.cookie })
    expect(own.status).toBe(200)
    expect(JSON.stringify(await own.json())).not.toContain('worker-host')
    expect((await routes.call('GET', `/api/runs/${mallory.jobId}`, { cookie: alice.cookie })).status).toBe(404)

    for (const jobId of [alice.jobId, mallory.jobId]) {
      const refused = await routes.call('POST', `/api/runs/${jobId}/effects/model`, { cookie: alice.cookie, body: verdict })
      expect(refused.status).toBe(403)
    }
    const [effects] = await rows(
      sql`select count(*)::int as n from a2_effects where status = 'UNKNOWN' and job_id in (${alice.jobId}, ${mallory.jobId})`,
    )
    expect(effects.n).toBe(2)
    const [audit] = await rows(sql`select count(*)::int as n from operator_audit`)
    expect(audit.n).toBe(0)
    // A wrong token is no operator.
    const wrong = await routes.call('POST', `/api/runs/${alice.jobId}/effects/model`, {
      cookie: alice.cookie,
      body: verdict,
      headers: { authorization: 'Bearer nope' },
    })
    expect(wrong.status).toBe(403)
  })

  it('an operator (token) sees every run with its worker, settles an UNKNOWN effect, and each resolution is audited', async () => {
    const bob = await userWithUnknownRun()
    const list = (await (await routes.call('GET', '/api/runs', { headers: bearer })).json()) as {
      operator: boolean
      runs: Array<Record<string, unknown>>
    }
    expect(list.operator).toBe(true)
    expect(list.runs.length).toBeGreaterThanOrEqual(3) // alice's, mallory's and bob's
    expect(list.runs.find((r) => r.id === bob.jobId)?.owner).toBe('worker-host:4242')
    expect((await routes.call('GET', '/api/runs?scope=all', { headers: bearer })).status).toBe(200)

    const resolved = await routes.call('POST', `/api/runs/${bob.jobId}/effects/model`, { headers: bearer, body: verdict })
    expect(resolved.status).toBe(200)
    const again = await routes.call('POST', `/api/runs/${bob.jobId}/effects/model`, { headers: bearer, body: verdict })
    expect(again.status).toBe(409)
    const audit = await rows(
      sql`select operator, action, job_id, effect_key, verdict, outcome, at from operator_audit where job_id = ${bob.jobId} order by id`,
    )
    expect(audit.map((a) => [a.operator, a.action, Number(a.job_id), a.effect_key, a.verdict])).toEqual([
      [expect.stringMatching(/^token:[0-9a-f]{8}$/), 'resolve_effect', bob.jobId, 'model', { done: false }],
      [expect.stringMatching(/^token:[0-9a-f]{8}$/), 'resolve_effect', bob.jobId, 'model', { done: false }],
    ])
    expect(audit[0].outcome).not.toMatch(/^refused/)
    expect(audit[1].outcome).toBe('refused:conflict')
    expect(audit.every((a) => a.at)).toBe(true)
  })

  it.each([
    { done: true, shown: 'done' },
    { done: false, shown: 'cancelled' },
  ])('an operator settling an UNKNOWN tool call (done: $done) puts its outcome on the user’s screen: $shown', async ({ done, shown }) => {
    const user = await routes.newUser()
    const { server } = await routes.chatServer.getChatServer()
    await server.append(
      user.sessionId,
      { id: 'm', type: 'message', payload: { text: 'tell the team' } },
      { id: 'g', type: 'generate', payload: { for: 'm' } },
    )
    const [job] = await rows(sql`select id from a2_jobs where session_id = ${user.sessionId}`)
    const jobId = Number(job.id)
    await rows(sql`update a2_jobs set status = 'UNKNOWN', attempt = 1, owner = 'worker-host:4242' where id = ${jobId}`)
    await rows(
      sql`insert into a2_effects (job_id, key, status, attempt, cancel_version) values (${jobId}, 'tool:sendWebhook:call_1', 'UNKNOWN', 1, 0)`,
    )
    await server.append(user.sessionId, {
      type: 'tool.state',
      payload: { of: 'g', call: 'call_1', tool: 'sendWebhook', state: 'unknown', input: { message: 'shipped' }, settle: 'operator' },
    })
    const key = encodeURIComponent('tool:sendWebhook:call_1')
    const body = JSON.stringify(done ? { done, result: { status: 200 } } : { done })
    expect((await routes.call('POST', `/api/runs/${jobId}/effects/${key}`, { headers: bearer, body })).status).toBe(200)
    const log = (await server.read(user.sessionId, user.userId, { limit: 100 })) as ChatEvent[]
    const answer = foldChat(log).turns.find((t) => t.kind === 'assistant') as AnswerTurn
    expect(answer.parts).toEqual([expect.objectContaining({ call: 'call_1', state: shown, ...(done ? { result: { status: 200 } } : {}) })])
  })

  it('an allow-listed user is an operator; the token signs a browser in through an HttpOnly cookie', async () => {
    const carol = await userWithUnknownRun()
    process.env.A2_OPERATOR_USER_IDS = `u_00000000-0000-4000-8000-000000000000, ${carol.userId}`
    ;(await import('@/lib/env')).resetEnvForTests()
    const list = (await (await routes.call('GET', '/api/runs', { cookie: carol.cookie })).json()) as { operator: boolean }
    expect(list.operator).toBe(true)
    expect((await routes.call('POST', `/api/runs/${carol.jobId}/effects/model`, { cookie: carol.cookie, body: verdict })).status).toBe(200)
    const [row] = await rows(sql`select operator from operator_audit where job_id = ${carol.jobId}`)
    expect(row.operator).toBe(`user:${carol.userId}`)

    const dave = await routes.newUser()
    const { POST } = await import('@/app/api/operator/route')
    const signIn = (token: string) =>
      POST(
        new Request('http://localhost:3000/api/operator', {
          method: 'POST',
          headers: { origin: 'http://localhost:3000', 'content-type': 'application/json', cookie: dave.cookie },
          body: JSON.stringify({ token }),
        }),
      )
    const refused = await signIn('not-the-token')
    expect(refused.status).toBe(403)
    expect(refused.headers.get('set-cookie')).toBeNull()
    const accepted = await signIn(TOKEN)
    expect(accepted.status).toBe(200)
    const cookie = accepted.headers.get('set-cookie')!
    expect(cookie).toMatch(/^a2_operator=.+; Path=\/; HttpOnly; SameSite=Strict/)
    const asOperator = (await (await routes.call('GET', '/api/runs', { cookie: `${dave.cookie}; ${cookie.split(';')[0]}` })).json()) as {
      operator: boolean
    }
    expect(asOperator.operator).toBe(true)
  })
})
