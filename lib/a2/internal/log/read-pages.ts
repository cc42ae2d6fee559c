/**
 * A range of a session's log, read in pages: the one loop behind every "read it all" (the
 * snapshot's fold, a consumer's history), so a 100k-event session never comes back as one
 * result set.
 */

/** 5,000 events a page: one round trip per ~25 chat answers, bounded memory per page. */
export const DEFAULT_PAGE_SIZE = 5_000

/** How one page is read: any of `server.read`, `ctx.read`, or the log's own read. */
export type PageReader<E> = (page: { after: number; before?: number; limit: number }) => Promise<E[]>

/** Yields the events with `after < index < before` (both optional), in index order, a page at a time. */
export async function* readPages<E extends { index: number }>(
  read: PageReader<E>,
  range: { after?: number; before?: number; pageSize?: number } = {},
): AsyncGenerator<E[]> {
  const limit = range.pageSize ?? DEFAULT_PAGE_SIZE
  let after = range.after ?? -1
  while (range.before === undefined || after < range.before - 1) {
    const page = await read(range.before === undefined ? { after, limit } : { after, before: range.before, limit })
    if (page.length === 0) return
    yield page
    after = page[page.length - 1].index
  }
}

/** Every event of the range, read in pages. */
export async function readAll<E extends { index: number }>(
  read: PageReader<E>,
  range: { after?: number; before?: number; pageSize?: number } = {},
): Promise<E[]> {
  const all: E[] = []
  for await (const page of readPages(read, range)) all.push(...page)
  return all
}
