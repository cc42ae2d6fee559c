'use client'
import { memo, useEffect, useLayoutEffect, useRef, useState } from 'react'
import type { UserTurn } from '@/lib/chat/fold/reducer'
import { MAX_MESSAGE_CHARS } from '@/lib/chat/limits'
import { PencilIcon } from '../icons'
import { CopyButton } from './copy-button'
import { MessageFiles } from './attachments'

/** One of the reader's messages: its text, Copy and Edit, and the ‹ › switcher; editing, a form in its place. */
export const UserMessage = memo(function UserMessage({
  turn,
  canEdit,
  onEdit,
  versions,
  readOnly = false,
}: {
  turn: UserTurn
  canEdit: boolean
  /** No edit at all (a shared link's view), not only not now. */
  readOnly?: boolean
  onEdit: (messageId: string, text: string) => void
  /** The ‹ 1/2 › switcher (renders nothing for one version). */
  versions: React.ReactNode
}) {
  const [editing, setEditing] = useState(false)
  const [draft, setDraft] = useState(turn.text)
  const textareaRef = useRef<HTMLTextAreaElement>(null)
  const editButtonRef = useRef<HTMLButtonElement>(null)

  useEditField(textareaRef, editing, draft)

  const trimmed = draft.trim()
  const tooLong = draft.length > MAX_MESSAGE_CHARS
  const canSave = canEdit && trimmed.length > 0 && !tooLong && trimmed !== turn.text.trim()

  const cancel = () => {
    setEditing(false)
    setDraft(turn.text)
    requestAnimationFrame(() => editButtonRef.current?.focus())
  }
  const save = () => {
    if (!canSave) return
    setEditing(false)
    onEdit(turn.id, draft)
  }

  if (editing) {
    return (
      // One element with the message's below (React keeps it as the one switches to the other), so
      // focus put on it as an edit is sent stays there: focusable from script only.
      <article
        data-testid="message-user"
        data-message-id={turn.id}
        aria-label="You (editing)"
        tabIndex={-1}
        className="flex justify-end outline-none"
      >
        <EditMessageForm
          turn={turn}
          draft={draft}
          setDraft={setDraft}
          textareaRef={textareaRef}
          tooLong={tooLong}
          canSave={canSave}
          onSave={save}
          onCancel={cancel}
        />
      </article>
    )
  }

  // The text first, then its actions and versions: the reading order a screen reader follows.
  return (
    <article
      data-testid="message-user"
      data-message-id={turn.id}
      aria-label="You"
      tabIndex={-1}
      className="group/user relative flex flex-col items-end gap-1 rounded-lg outline-none focus-visible:outline-2 focus-visible:outline-offset-4 focus-visible:outline-neutral-400"
    >
      {/* A message of files only has no bubble of text. */}
      {turn.text && (
        <div
          data-testid="message-text"
          className="max-w-[85%] rounded-3xl bg-neutral-100 px-4 py-2.5 text-[15px] leading-6 break-words whitespace-pre-wrap dark:bg-neutral-800"
        >
          {turn.text}
        </div>
      )}
      {turn.files && turn.files.length > 0 && <MessageFiles files={turn.files} />}
      {/* On wide screens the row shows on hover, over the space below, so hidden it takes no
          room; with versions to switch it stays in the flow. Phones always show it. */}
      <div className="flex items-center gap-0.5 md:absolute md:top-full md:right-0 md:mt-0.5 md:has-[[data-testid=version-switcher]]:static md:has-[[data-testid=version-switcher]]:mt-0">
        <div className="flex shrink-0 items-center gap-0.5 opacity-0 transition-opacity group-hover/user:opacity-100 focus-within:opacity-100 max-md:opacity-100">
          {turn.text && <CopyButton text={turn.text} label="Copy message" />}
          {!readOnly && (
            <EditButton
              buttonRef={editButtonRef}
              canEdit={canEdit}
              onClick={() => {
                setDraft(turn.text)
                setEditing(true)
              }}
            />
          )}
        </div>
        {versions}
      </div>
    </article>
  )
})

/** The message being edited, in the message's place: Enter sends it as a new version, Esc cancels. */
function EditMessageForm({
  turn,
  draft,
  setDraft,
  textareaRef,
  tooLong,
  canSave,
  onSave,
  onCancel,
}: {
  turn: UserTurn
  draft: string
  setDraft: (draft: string) => void
  textareaRef: React.RefObject<HTMLTextAreaElement | null>
  tooLong: boolean
  canSave: boolean
  onSave: () => void
  onCancel: () => void
}) {
  return (
    <form
      className="w-full max-w-[85%] rounded-3xl border border-neutral-300 bg-neutral-50 p-3 dark:border-neutral-700 dark:bg-neutral-800/70"
      onSubmit={(e) => {
        e.preventDefault()
        onSave()
      }}
    >
      <label htmlFor={`edit-${turn.id}`} className="sr-only">
        Edit your message
      </label>
      <textarea
        id={`edit-${turn.id}`}
        ref={textareaRef}
        value={draft}
        onChange={(e) => setDraft(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') {
            e.preventDefault()
            onCancel()
          } else if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault()
            onSave()
          }
        }}
        rows={1}
        className="block w-full resize-none bg-transparent px-1 text-[15px] leading-6 outline-none"
      />
      <div className="mt-2 flex items-center justify-end gap-2">
        {tooLong && (
          <span className="mr-auto text-xs text-red-600 dark:text-red-400">
            {draft.length.toLocaleString()} / {MAX_MESSAGE_CHARS.toLocaleString()}
          </span>
        )}
        <button
          type="button"
          onClick={onCancel}
          className="rounded-full px-3.5 py-1.5 text-sm font-medium text-neutral-700 hover:bg-neutral-200 dark:text-neutral-200 dark:hover:bg-neutral-700"
        >
          Cancel
        </button>
        <button
          type="submit"
          disabled={!canSave}
          className="rounded-full bg-neutral-900 px-3.5 py-1.5 text-sm font-medium text-white hover:bg-neutral-700 disabled:opacity-40 dark:bg-white dark:text-neutral-900 dark:hover:bg-neutral-200"
        >
          Send
        </button>
      </div>
    </form>
  )
}

/** The edit field grows with its text (up to 320 px) and takes focus, caret at the end, as it opens. */
function useEditField(textareaRef: React.RefObject<HTMLTextAreaElement | null>, editing: boolean, draft: string): void {
  useLayoutEffect(() => {
    const el = textareaRef.current
    if (!editing || !el) return
    el.style.height = 'auto'
    el.style.height = `${Math.min(el.scrollHeight, 320)}px`
  }, [editing, draft, textareaRef])

  useEffect(() => {
    if (!editing) return
    const el = textareaRef.current
    el?.focus()
    el?.setSelectionRange(el.value.length, el.value.length)
  }, [editing, textareaRef])
}

function EditButton({
  buttonRef,
  canEdit,
  onClick,
}: {
  buttonRef: React.RefObject<HTMLButtonElement | null>
  canEdit: boolean
  onClick: () => void
}) {
  return (
    <button
      ref={buttonRef}
      type="button"
      data-testid="edit-button"
      onClick={onClick}
      disabled={!canEdit}
      aria-label="Edit message"
      title={canEdit ? 'Edit' : 'Wait for the answer to finish (or stop it) to edit'}
      className="inline-flex size-8 items-center justify-center rounded-lg text-neutral-500 hover:bg-neutral-100 hover:text-neutral-900 disabled:cursor-not-allowed disabled:opacity-40 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100"
    >
      <PencilIcon className="size-4" />
    </button>
  )
}
