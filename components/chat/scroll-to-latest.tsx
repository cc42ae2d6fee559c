/**
 * A chat opens at its latest turn. The conversation comes in the page's HTML (page-first-screen.ts);
 * this script, parsed right after the chat's markup, puts the conversation's scroller at its bottom
 * in the first frame, as the browser's scroll to the bottom (follow-bottom.ts) would once the
 * scripts have run. Without it a phone painted the chat's first turns, then the latest ones after
 * hydration: the page's largest paint came only after every script had loaded and run (figure 13,
 * bench/README.md). In an animation frame, so the layout it needs is the frame's own rather than
 * one more forced while the HTML is parsed.
 */
export function ScrollToLatest({ nonce }: { nonce?: string }) {
  const script = `requestAnimationFrame(function(){var s=document.querySelector('[data-conversation-scroller]');if(s)s.scrollTop=s.scrollHeight})`
  return <script nonce={nonce} dangerouslySetInnerHTML={{ __html: script }} />
}
