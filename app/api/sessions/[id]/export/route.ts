/**
 * The chat as a file to keep: `?format=json` (a2-chat-export@1, lib/chat/server/export.ts) or
 * `?format=markdown` (the default). Owner only: another user's chat is a 404.
 */
import { A2Error } from '@/lib/a2'
import { chatFold } from '@/lib/chat/fold/checkpoint'
import { exportChat, exportMarkdown } from '@/lib/chat/server/export'
import { getChatServer } from '@/lib/chat/server/chat-server'
import { parse, route, sessionIdSchema } from '@/lib/http/route'
import { foldingSnapshot } from '@/lib/http/snapshots'

export const dynamic = 'force-dynamic'

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return route(request, async ({ userId }) => {
    const id = parse(sessionIdSchema, (await params).id, 'session id')
    const format = new URL(request.url).searchParams.get('format') ?? 'markdown'
    if (format !== 'markdown' && format !== 'json') throw new A2Error('bad_request', 'format is markdown or json')
    const { server } = await getChatServer()
    const release = foldingSnapshot()
    try {
      const { session, state } = await server.fold(id, userId, chatFold)
      const chat = exportChat({ id: session.id, title: session.title }, state)
      // The title is the user's text: the file name is the session id.
      const disposition = `attachment; filename="chat-${session.id}.${format === 'json' ? 'json' : 'md'}"`
      return format === 'json'
        ? new Response(JSON.stringify(chat, null, 2), { headers: { 'content-type': 'application/json', 'content-disposition': disposition } })
        : new Response(exportMarkdown(chat), { headers: { 'content-type': 'text/markdown; charset=utf-8', 'content-disposition': disposition } })
    } finally {
      release()
    }
  })
}
