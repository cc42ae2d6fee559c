/**
 * Uploads no message named (a send cancelled after the upload, a tab closed with files in the
 * composer) are deleted A2_UNREFERENCED_FILE_TTL_MS after they arrived: a sweep at start and
 * every SWEEP_EVERY_MS after, in every app process (each delete is by id: two sweeps racing
 * delete nothing twice).
 */
import { env } from '@/lib/env'
import { getFiles } from './index'

export const SWEEP_EVERY_MS = 5 * 60 * 1000

export function startFileSweep(): () => void {
  const sweep = async () => {
    try {
      const swept = await (await getFiles()).sweepUnreferenced(env().A2_UNREFERENCED_FILE_TTL_MS)
      if (swept > 0) console.log(`[a2] swept ${swept} upload${swept === 1 ? '' : 's'} no message named`)
    } catch (error) {
      console.error('[a2] file sweep failed', error)
    }
  }
  void sweep()
  const timer = setInterval(() => void sweep(), SWEEP_EVERY_MS)
  timer.unref()
  return () => clearInterval(timer)
}
