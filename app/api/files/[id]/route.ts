/**
 * A file, to its owner only (any device of the account): anyone else, like an id that does not
 * exist, gets a 404. `?download=1` asks for it as a download whatever its type; `?thumb=1` for an
 * image's thumbnail (lib/files/thumbnail.ts).
 */
import { getFiles } from '@/lib/files'
import { serveFile } from '@/lib/files/serve'
import { parse, route } from '@/lib/http/route'
import { z } from 'zod'

export const dynamic = 'force-dynamic'

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return route(request, async ({ userId }) => {
    const id = parse(z.string().uuid(), (await params).id, 'file id')
    const files = await getFiles()
    return serveFile(request, await files.forOwner(id, userId), files)
  })
}
