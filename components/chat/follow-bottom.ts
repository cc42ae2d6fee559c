'use client'
import { useCallback, useEffect, useLayoutEffect, useRef, type RefObject } from 'react'

/** How close to the bottom (px) still counts as "at the bottom". */
const STICK_THRESHOLD = 64

/**
 * Follows the bottom of the scroller while the content grows (an answer streaming), unless the
 * reader scrolled up to read; a send (`followKey` bumped) follows again. `stick` says whether
 * it follows now, `setAtBottom` shows it (the "jump to latest" button).
 */
export function useFollowBottom({
  scrollRef,
  stick,
  setAtBottom,
  turns,
  followKey,
}: {
  scrollRef: RefObject<HTMLDivElement | null>
  stick: RefObject<boolean>
  setAtBottom: (atBottom: boolean) => void
  /** Changes when the conversation does: follow if stuck to the bottom. */
  turns: unknown
  /** Bumped when this browser sends: scrolls to the bottom and follows again. */
  followKey: number
}) {
  const contentRef = useRef<HTMLDivElement>(null)
  // The scroll position at the last scroll event, or where the page last put it: moving up from
  // it is the reader leaving.
  const lastTop = useRef(0)
  const scrollToBottom = useCallback(() => {
    const el = scrollRef.current
    if (!el) return
    el.scrollTop = el.scrollHeight
    // Scroll events come once a frame: this move down and a reader's wheel up in the same frame
    // reach updateAtBottom as one event, which must measure the reader's move from here.
    lastTop.current = el.scrollTop
  }, [scrollRef])

  // Content grows (chunks, Markdown re-layout, images): follow if stuck to the bottom.
  useEffect(() => {
    const content = contentRef.current
    if (!content) return
    // Not following: the reader's place holds and "jump to latest" shows; content growing
    // under them follows again only from the very bottom (nothing to scroll yet, say).
    const observer = new ResizeObserver(() => {
      const el = scrollRef.current
      if (!stick.current && el) stick.current = el.scrollHeight - el.scrollTop - el.clientHeight <= 1
      if (stick.current) scrollToBottom()
      setAtBottom(stick.current)
    })
    observer.observe(content)
    return () => observer.disconnect()
  }, [scrollToBottom, scrollRef, stick, setAtBottom])

  useLayoutEffect(() => {
    if (stick.current) scrollToBottom()
  }, [turns, scrollToBottom, stick])

  useLayoutEffect(() => {
    if (followKey === 0) return
    stick.current = true
    setAtBottom(true)
    scrollToBottom()
  }, [followKey, scrollToBottom, stick, setAtBottom])

  function updateAtBottom() {
    const el = scrollRef.current
    if (!el) return
    const fromBottom = el.scrollHeight - el.scrollTop - el.clientHeight
    const moved = el.scrollTop - lastTop.current
    lastTop.current = el.scrollTop
    // Up, even within the threshold, stops following: a trackpad scrolls 5-10 px per event
    // and chunks land every ~35 ms, so re-following within 64 px pulled the reader back down
    // before they could leave (e2e/scroll.spec.ts). Content shrinking clamps scrollTop down
    // too, but then it is at the very bottom (<= 1 px), which still follows. Only a move down
    // follows again: not moving (the page's own scroll to the bottom, a wheel step it overrode)
    // leaves what the wheel decided.
    if (moved < 0 && fromBottom > 1) stick.current = false
    else if (moved > 0 && fromBottom <= STICK_THRESHOLD) stick.current = true
    setAtBottom(stick.current)
  }

  const jumpToLatest = () => {
    stick.current = true
    setAtBottom(true)
    scrollToBottom()
  }

  return { contentRef, updateAtBottom, jumpToLatest }
}
