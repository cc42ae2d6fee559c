/**
 * A file, to its owner only (any device of the account): anyone else, like an id that does not
 * exist, gets a 404. `?download=1` asks for it as a download whatever its type.
 */
import { A2Error } from '@/lib/a2'
import { getFiles } from '@/lib/files'
import { fileResponse } from '@/lib/files/serve'
import { parse, route } from '@/lib/http/route'
import { z } from 'zod'

export const dynamic = 'force-dynamic'

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return route(request, async ({ userId }) => {
    const id = parse(z.string().uuid(), (await params).id, 'file id')
    const files = await getFiles()
    const file = await files.forOwner(id, userId)
    const bytes = file && (await files.bytesOf(file))
    if (!file || !bytes) throw new A2Error('not_found', 'no such file')
    return fileResponse(file, bytes, { download: new URL(request.url).searchParams.has('download') })
  })
}
