'use client'
import { useCallback, useEffect, useLayoutEffect, useRef, useState, type RefObject } from 'react'
import type { VisibleTurn } from '@/lib/chat/fold/versions'

/**
 * Turns rendered when a chat opens: the latest 60 (30 exchanges), whatever its length. A chat
 * of 4,500 answers (9,000 turns, 99k events) rendered whole took 21–30 s to show its newest
 * answer in Chromium, and re-rendered every turn's element at each chunk.
 */
const FIRST_TURNS = 60
/**
 * Of those, the latest 20 come with the page; the rest are added above while the page is idle,
 * 4 at a time. The 60-turn chat's HTML was parsed, styled and laid out whole before its first
 * paint, and hydrated whole after it: tasks a phone could not split. Added 10 at a time, each
 * addition (render, commit, the layout that keeps the reader's place) took 17–24 ms of a
 * laptop's main thread, 68–95 ms at a phone's 4× slower CPU: over the 50 ms that blocks a tap
 * (bench/README.md's figure 13).
 */
const PAINTED_TURNS = 20
const FILL_TURNS = 4
/** Turns each "Show earlier messages" adds above. */
export const MORE_TURNS = 60

export interface EarlierTurns {
  /** Index in `turns` of the first turn on screen. */
  start: number
  /** The turns on screen. */
  shown: VisibleTurn[]
  /** The rest of the first screen's turns are still being added above. */
  filling: boolean
  loadingEarlier: boolean
  loadFailed: boolean
  /** "Show earlier messages": the next page above, from the browser's turns or the server's. */
  showEarlier: () => void
}

/**
 * Which of the conversation's turns are on screen: the latest FIRST_TURNS, more above as the
 * reader asks (fetched from the server when the browser does not hold them), and down from a
 * turn to reveal (a search result's), which is scrolled into view. Revealing a turn stops
 * following the bottom (`stick`, `setAtBottom`).
 */
export function useEarlierTurns({
  turns,
  hasOlder,
  onLoadOlder,
  revealTurn,
  scrollRef,
  stick,
  setAtBottom,
}: {
  turns: VisibleTurn[]
  hasOlder: boolean
  onLoadOlder?: () => Promise<void>
  revealTurn?: string
  scrollRef: RefObject<HTMLDivElement | null>
  stick: RefObject<boolean>
  setAtBottom: (atBottom: boolean) => void
}): EarlierTurns {
  // The earliest turn on screen once the reader asked for earlier ones, by slot (a slot keeps
  // its place when its version is switched); until then, the latest FIRST_TURNS.
  const [fromSlot, setFromSlot] = useState<string | null>(null)
  // Distance from the content's end to the scroll position, kept across "Show earlier" so the
  // turns being read stay where they were while the earlier ones appear above.
  const keepFromEnd = useRef<number | null>(null)
  const pinned = fromSlot === null ? -1 : turns.findIndex((t) => t.slot === fromSlot)
  // How many of the latest turns are on screen while none is pinned: PAINTED_TURNS, then up to FIRST_TURNS.
  const [filled, setFilled] = useState(PAINTED_TURNS)
  const start = pinned >= 0 ? pinned : Math.max(0, turns.length - filled)
  const shown = start === 0 ? turns : turns.slice(start)
  const filling = pinned < 0 && filled < FIRST_TURNS && start > 0

  // Asked for earlier turns that the server still had to send: shown once they are in.
  const [loadingEarlier, setLoadingEarlier] = useState(false)
  const [loadFailed, setLoadFailed] = useState(false)
  const revealEarlier = useCallback(() => {
    const el = scrollRef.current
    keepFromEnd.current = el ? el.scrollHeight - el.scrollTop : null
    setFromSlot(turns[Math.max(0, start - MORE_TURNS)].slot)
  }, [turns, start, scrollRef])
  const showEarlier = () => {
    if (start >= MORE_TURNS || !hasOlder || !onLoadOlder) return revealEarlier()
    setLoadingEarlier(true)
    setLoadFailed(false)
    onLoadOlder().catch(() => {
      setLoadFailed(true)
      setLoadingEarlier(false)
    })
  }
  useEffect(() => {
    if (!loadingEarlier || (start < MORE_TURNS && hasOlder)) return
    setLoadingEarlier(false)
    revealEarlier()
  }, [loadingEarlier, start, hasOlder, revealEarlier])

  // A turn to reveal: older pages come in until it is among the turns, then everything from it down shows and it scrolls into view.
  const revealed = useRef<string | undefined>(undefined)
  const revealAt = revealTurn === undefined ? -1 : turns.findIndex((t) => t.turn.id === revealTurn)
  useEffect(() => {
    if (revealTurn === undefined || revealed.current === revealTurn) return
    if (revealAt === -1) {
      if (hasOlder && onLoadOlder) onLoadOlder().catch(() => setLoadFailed(true))
      return
    }
    revealed.current = revealTurn
    stick.current = false
    setAtBottom(false)
    setFromSlot((slot) => (slot !== null && turns.findIndex((t) => t.slot === slot) <= revealAt ? slot : turns[revealAt].slot))
  }, [revealTurn, revealAt, hasOlder, onLoadOlder, turns, stick, setAtBottom])
  useLayoutEffect(() => {
    if (revealed.current === undefined || revealed.current !== revealTurn) return
    const el = scrollRef.current?.querySelector(`[data-turn-id="${CSS.escape(revealTurn)}"]`)
    if (el) el.scrollIntoView({ block: 'center' })
  }, [fromSlot, revealTurn, scrollRef])

  // The first screen's earlier turns, added above while the page is idle, the turns being read kept in place.
  useEffect(() => {
    if (!filling) return
    return whenIdle(() => {
      const el = scrollRef.current
      keepFromEnd.current = el ? el.scrollHeight - el.scrollTop : null
      setFilled((n) => Math.min(FIRST_TURNS, n + FILL_TURNS))
    })
  }, [filling, filled, scrollRef])

  useLayoutEffect(() => {
    const el = scrollRef.current
    if (keepFromEnd.current === null || !el) return
    el.scrollTop = el.scrollHeight - keepFromEnd.current
    keepFromEnd.current = null
  }, [start, scrollRef])

  return { start, shown, filling, loadingEarlier, loadFailed, showEarlier }
}

/** Runs `work` when the browser is idle (soon in any case), or a moment later where it cannot tell (Safari); returns the cancel. */
function whenIdle(work: () => void): () => void {
  if (typeof requestIdleCallback === 'function') {
    const id = requestIdleCallback(work, { timeout: 500 })
    return () => cancelIdleCallback(id)
  }
  const id = setTimeout(work, 50)
  return () => clearTimeout(id)
}
