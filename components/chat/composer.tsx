'use client'
import { forwardRef, useEffect, useImperativeHandle, useLayoutEffect, useRef, useState } from 'react'
import { MAX_MESSAGE_CHARS } from '@/lib/chat/limits'
import { ArrowUpIcon, SpinnerIcon, StopIcon } from '../icons'
import { touchPrimary } from './touch'
import { preloadMarkdown } from './answer-markdown'
import { clearDraftIf, readDraft, writeDraft } from './drafts'
import { ModelPicker } from './model-picker'
import { AttachButton, AttachmentTray, fileDropHandlers, useAttachments } from './attachments'
import type { FileRef } from '@/lib/chat/contract'

export interface ComposerHandle {
  focus(): void
  /** Puts text back in the box (e.g. a message whose send was abandoned), unless something is typed. */
  restore(text: string): void
  /** Empties the box if it still holds exactly `text` (that text was sent from elsewhere, e.g. Retry). */
  clearIf(text: string): void
}

interface ComposerProps {
  /**
   * Sends the text. Sync (or a resolved promise) clears the box; a rejected promise keeps
   * the text so nothing typed is lost.
   */
  onSend: (text: string, files: FileRef[]) => void | Promise<unknown>
  /** Stops the answer being written. */
  onStop?: () => void
  /** An answer is being written: the send button becomes Stop. */
  active?: boolean
  /** Sending is in progress elsewhere (e.g. creating the chat). */
  sending?: boolean
  disabled?: boolean
  placeholder?: string
  /**
   * Focus the box as it mounts. 'unless-touch': not on a touch screen, where focus opens the
   * on-screen keyboard over half the page (a chat opened to read it).
   */
  autoFocus?: boolean | 'unless-touch'
  /** Keeps what is typed and not sent under this key (drafts.ts): a chat's id, or 'new'. */
  draftKey?: string
}

const MAX_HEIGHT = 240
/** The counter appears from here on. */
const WARN_AT = Math.floor(MAX_MESSAGE_CHARS * 0.9)

export const Composer = forwardRef<ComposerHandle, ComposerProps>(function Composer(
  { onSend, onStop, active = false, sending = false, disabled = false, placeholder = 'Message a2 chat', autoFocus = false, draftKey },
  ref,
) {
  const [text, setText] = useState('')
  const textareaRef = useRef<HTMLTextAreaElement>(null)
  const attachments = useAttachments()
  const dropHandlers = fileDropHandlers(attachments.add)

  useDraft(draftKey, textareaRef, text, setText)

  // Decided in the browser (the server cannot tell a phone), once, as the box mounts.
  useEffect(() => {
    if (autoFocus === 'unless-touch' && !touchPrimary()) textareaRef.current?.focus()
    // eslint-disable-next-line react-hooks/exhaustive-deps -- on mount only
  }, [])

  useImperativeHandle(
    ref,
    () => ({
      focus: () => textareaRef.current?.focus(),
      restore: (value: string) => {
        setText((current) => (current.trim() ? current : value))
        textareaRef.current?.focus()
      },
      clearIf: (value: string) => setText((current) => (current === value ? '' : current)),
    }),
    [],
  )

  useAutosize(textareaRef, text)

  const length = text.length
  const tooLong = length > MAX_MESSAGE_CHARS
  // Text, or files on their own (a photo needs no words).
  const hasContent = text.trim().length > 0 || attachments.refs.length > 0
  const canSend = !active && !sending && !disabled && hasContent && !tooLong && !attachments.uploading && !attachments.failed

  const submit = () => {
    if (!canSend) return
    const sent = text
    const result = onSend(sent, attachments.refs)
    if (result instanceof Promise) {
      result.then(
        () => {
          setText((current) => (current === sent ? '' : current))
          attachments.clear()
          // The page may be gone by now ("/" navigates to the new chat): the stored draft too.
          if (draftKey !== undefined) clearDraftIf(draftKey, sent)
        },
        () => {},
      )
    } else {
      setText('')
      attachments.clear()
    }
    textareaRef.current?.focus()
  }

  const counterId = 'composer-counter'

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        submit()
      }}
      aria-label="Send a message"
      onDragOver={dropHandlers.onDragOver}
      onDrop={dropHandlers.onDrop}
      className={`relative flex flex-wrap items-end gap-2 rounded-[26px] border bg-white p-2 pl-4 shadow-sm transition-colors focus-within:border-neutral-400 dark:bg-neutral-800 dark:focus-within:border-neutral-500 ${
        tooLong ? 'border-red-400 dark:border-red-500/70' : 'border-neutral-200 dark:border-neutral-700'
      }`}
    >
      <AttachmentTray attachments={attachments} />
      <AttachButton onFiles={attachments.add} disabled={disabled} />
      <label htmlFor="composer-input" className="sr-only">
        Message
      </label>
      <textarea
        id="composer-input"
        ref={textareaRef}
        data-testid="composer-input"
        value={text}
        onChange={(e) => {
          setText(e.target.value)
          preloadMarkdown() // the answer to this will stream as Markdown
        }}
        onPaste={dropHandlers.onPaste}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault()
            submit()
          }
        }}
        rows={1}
        autoFocus={autoFocus === true}
        disabled={disabled}
        placeholder={placeholder}
        aria-describedby={length >= WARN_AT ? counterId : undefined}
        aria-invalid={tooLong || undefined}
        // Spell-check and writing extensions restyle text fields before React hydrates
        // (caret-color, data attributes); that is not a mismatch worth a dev-overlay error.
        suppressHydrationWarning
        className="max-h-60 min-h-10 flex-1 resize-none bg-transparent py-2 text-[15px] leading-6 text-neutral-900 outline-none placeholder:text-neutral-400 disabled:opacity-60 dark:text-neutral-100 dark:placeholder:text-neutral-500"
      />

      {length >= WARN_AT && <CharacterCounter id={counterId} length={length} tooLong={tooLong} />}

      <ModelPicker disabled={disabled} />

      <SendOrStop active={active} sending={sending} canSend={canSend} onStop={onStop} />
    </form>
  )
})

/**
 * What the box holds as it hydrates, and what is typed kept under `draftKey` (drafts.ts) as it
 * changes: text typed into the server-rendered box before React ran, else the stored draft.
 */
function useDraft(
  draftKey: string | undefined,
  textareaRef: React.RefObject<HTMLTextAreaElement | null>,
  text: string,
  setText: React.Dispatch<React.SetStateAction<string>>,
): void {
  // What the box holds as it hydrates: text typed into the server-rendered box before React ran
  // (React keeps the DOM's value, but the state starts empty and Send would stay disabled), else
  // the draft, read in the browser (the server has none), before paint.
  useLayoutEffect(() => {
    const typed = textareaRef.current?.value ?? ''
    const draft = typed || (draftKey === undefined ? '' : readDraft(draftKey))
    if (draft) setText((current) => current || draft)
    // eslint-disable-next-line react-hooks/exhaustive-deps -- on mount only: the chat page remounts per chat
  }, [])
  // The first render's empty box is not a draft: writing it would erase the one being read.
  const firstWrite = useRef(true)
  useEffect(() => {
    if (draftKey === undefined) return
    if (firstWrite.current) {
      firstWrite.current = false
      return
    }
    writeDraft(draftKey, text)
  }, [draftKey, text])
}

function useAutosize(textareaRef: React.RefObject<HTMLTextAreaElement | null>, text: string): void {
  // Autosize: grow with the text up to MAX_HEIGHT, then scroll.
  useLayoutEffect(() => {
    const el = textareaRef.current
    if (!el) return
    if (text === '') {
      // One row, as rendered: no measuring, which would lay out the whole page inside the
      // commit that mounts the box (hydration's, on a phone already its longest task).
      el.style.height = ''
      el.style.overflowY = 'hidden'
      return
    }
    el.style.height = 'auto'
    el.style.height = `${Math.min(el.scrollHeight, MAX_HEIGHT)}px`
    el.style.overflowY = el.scrollHeight > MAX_HEIGHT ? 'auto' : 'hidden'
  }, [text, textareaRef])
}

function CharacterCounter({ id, length, tooLong }: { id: string; length: number; tooLong: boolean }) {
  return (
    <span
      id={id}
      aria-live="polite"
      className={`mb-2.5 shrink-0 text-xs tabular-nums ${
        tooLong ? 'font-medium text-red-600 dark:text-red-400' : 'text-neutral-500 dark:text-neutral-400'
      }`}
    >
      {length.toLocaleString()} / {MAX_MESSAGE_CHARS.toLocaleString()}
      {tooLong && <span className="sr-only"> — too long, shorten your message to send it</span>}
    </span>
  )
}

/** Send, or Stop while an answer is being written. */
function SendOrStop({ active, sending, canSend, onStop }: { active: boolean; sending: boolean; canSend: boolean; onStop?: () => void }) {
  return active ? (
    <button
      type="button"
      data-testid="stop-button"
      onClick={() => onStop?.()}
      aria-label="Stop generating"
      title="Stop generating (Esc)"
      className="inline-flex size-10 shrink-0 items-center justify-center rounded-full bg-neutral-900 text-white transition hover:bg-neutral-700 dark:bg-white dark:text-neutral-900 dark:hover:bg-neutral-200"
    >
      <StopIcon className="size-5" />
    </button>
  ) : (
    <button
      type="submit"
      data-testid="send-button"
      disabled={!canSend}
      aria-label={sending ? 'Sending' : 'Send message'}
      title="Send (Enter)"
      className="inline-flex size-10 shrink-0 items-center justify-center rounded-full bg-neutral-900 text-white transition enabled:hover:bg-neutral-700 disabled:cursor-not-allowed disabled:bg-neutral-200 disabled:text-neutral-400 dark:bg-white dark:text-neutral-900 dark:enabled:hover:bg-neutral-200 dark:disabled:bg-neutral-700 dark:disabled:text-neutral-500"
    >
      {sending ? <SpinnerIcon className="size-5" /> : <ArrowUpIcon className="size-5" />}
    </button>
  )
}
