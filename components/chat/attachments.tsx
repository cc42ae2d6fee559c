'use client'
/**
 * Files in the composer and in sent messages (docs/attachments.md). The composer holds a list of
 * pending files: each uploads at once (POST /api/files, raw bytes, with progress and a cancel),
 * shows as a thumbnail (images) or a chip, and can be removed before sending; Send carries the
 * references of those that arrived. A sent message shows its files linked to the serve route:
 * the owner's, or a share link's (FileLinks), never a public URL.
 */
import { createContext, useCallback, useContext, useEffect, useRef, useState } from 'react'
import type { FileRef } from '@/lib/chat/contract'
import { whenIdentitySettled } from '../chat-list-store'

/** What the chooser offers (the server sniffs the bytes whatever this says). */
const ACCEPT =
  'image/png,image/jpeg,image/webp,image/gif,application/pdf,text/*,.md,.txt,.csv,.json,.ts,.tsx,.js,.py,.go,.rs,.java,.c,.h,.cpp,.sql,.yaml,.yml,.toml'

export interface PendingFile {
  key: string
  name: string
  size: number
  /** An object URL of an image, for its thumbnail. */
  preview?: string
  progress: number
  status: 'uploading' | 'done' | 'failed'
  ref?: FileRef
  error?: string
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

/** One upload with progress; `abort` cancels it (nothing is stored: the server refuses a cut-off body). */
function uploadFile(file: File, onProgress: (fraction: number) => void): { done: Promise<FileRef>; abort: () => void } {
  const xhr = new XMLHttpRequest()
  let aborted = false
  const done = new Promise<FileRef>((resolve, reject) => {
    let name: string
    try {
      name = encodeURIComponent(file.name || 'pasted file')
    } catch {
      return reject(new Error('this file’s name cannot be sent: rename it'))
    }
    // A fresh browser's first list mints its identity: an upload sent before it answers would mint
    // another, and the file would belong to the identity whose cookie lost.
    const send = () => {
      if (aborted) return reject(new Error('cancelled'))
      xhr.open('POST', '/api/files')
      xhr.setRequestHeader('content-type', 'application/octet-stream')
      xhr.setRequestHeader('x-file-name', name)
      xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total)
      xhr.onload = () => {
        try {
          const body = JSON.parse(xhr.responseText) as { file?: FileRef; error?: { message: string } }
          if (xhr.status === 201 && body.file) resolve(body.file)
          else reject(new Error(body.error?.message ?? `the upload failed (${xhr.status})`))
        } catch {
          reject(new Error(`the upload failed (${xhr.status})`))
        }
      }
      xhr.onerror = () => reject(new Error('the upload failed: no connection'))
      xhr.onabort = () => reject(new Error('cancelled'))
      xhr.send(file)
    }
    void whenIdentitySettled().then(send, send)
  })
  return {
    done,
    abort: () => {
      aborted = true
      xhr.abort()
    },
  }
}

let nextKey = 0

/** The composer's pending files. */
export function useAttachments() {
  const [items, setItems] = useState<PendingFile[]>([])
  const aborts = useRef(new Map<string, () => void>())
  const update = (key: string, change: Partial<PendingFile>) =>
    setItems((list) => list.map((item) => (item.key === key ? { ...item, ...change } : item)))

  const add = useCallback((files: Iterable<File>) => {
    for (const file of files) {
      const key = `f${nextKey++}`
      const preview = file.type.startsWith('image/') ? URL.createObjectURL(file) : undefined
      setItems((list) => [...list, { key, name: file.name || 'pasted file', size: file.size, preview, progress: 0, status: 'uploading' }])
      const upload = uploadFile(file, (progress) => update(key, { progress }))
      aborts.current.set(key, upload.abort)
      upload.done.then(
        (ref) => update(key, { status: 'done', progress: 1, ref }),
        (error: Error) => update(key, { status: 'failed', error: error.message }),
      )
      void upload.done.finally(() => aborts.current.delete(key)).catch(() => {})
    }
  }, [])

  const remove = useCallback((key: string) => {
    aborts.current.get(key)?.()
    setItems((list) => {
      const gone = list.find((item) => item.key === key)
      if (gone?.preview) URL.revokeObjectURL(gone.preview)
      return list.filter((item) => item.key !== key)
    })
  }, [])

  /** After a send: the chips go (the files are the message's now). */
  const clear = useCallback(() => {
    setItems((list) => {
      for (const item of list) if (item.preview) URL.revokeObjectURL(item.preview)
      return []
    })
  }, [])

  useEffect(() => {
    const pending = aborts.current
    return () => pending.forEach((abort) => abort())
  }, [])

  return {
    items,
    add,
    remove,
    clear,
    /** The references to send: every file arrived (none uploading, none failed). */
    refs: items.flatMap((item) => (item.ref ? [item.ref] : [])),
    uploading: items.some((item) => item.status === 'uploading'),
    failed: items.some((item) => item.status === 'failed'),
  }
}

export type Attachments = ReturnType<typeof useAttachments>

/** Drag and drop onto the composer, and paste into its box: files become attachments; text pastes as usual. */
export function fileDropHandlers(add: (files: Iterable<File>) => void) {
  const hasFiles = (e: React.DragEvent) => Array.from(e.dataTransfer.types).includes('Files')
  return {
    onDragOver: (e: React.DragEvent) => {
      if (!hasFiles(e)) return
      e.preventDefault()
      e.dataTransfer.dropEffect = 'copy'
    },
    onDrop: (e: React.DragEvent) => {
      if (e.dataTransfer.files.length === 0) return
      e.preventDefault()
      add(Array.from(e.dataTransfer.files))
    },
    onPaste: (e: React.ClipboardEvent) => {
      if (e.clipboardData.files.length === 0) return
      e.preventDefault()
      add(Array.from(e.clipboardData.files))
    },
  }
}

export function AttachButton({ onFiles, disabled }: { onFiles: (files: Iterable<File>) => void; disabled?: boolean }) {
  const input = useRef<HTMLInputElement>(null)
  return (
    <>
      <input
        ref={input}
        type="file"
        multiple
        accept={ACCEPT}
        hidden
        data-testid="attach-input"
        onChange={(e) => {
          if (e.target.files) onFiles(Array.from(e.target.files))
          e.target.value = '' // the same file can be chosen again
        }}
      />
      <button
        type="button"
        data-testid="attach-button"
        disabled={disabled}
        onClick={() => input.current?.click()}
        aria-label="Attach files"
        title="Attach images, PDFs or text files (or drop or paste them here)"
        className="mb-0.5 inline-flex size-9 shrink-0 items-center justify-center rounded-full text-neutral-600 hover:bg-neutral-100 disabled:opacity-40 dark:text-neutral-300 dark:hover:bg-neutral-700"
      >
        <svg
          viewBox="0 0 24 24"
          fill="none"
          stroke="currentColor"
          strokeWidth={2}
          strokeLinecap="round"
          strokeLinejoin="round"
          className="size-5"
          aria-hidden="true"
        >
          <path d="m21.4 11.1-8.5 8.5a5.5 5.5 0 0 1-7.8-7.8l8.5-8.5a3.7 3.7 0 0 1 5.2 5.2l-8.5 8.5a1.8 1.8 0 0 1-2.6-2.6l7.8-7.8" />
        </svg>
      </button>
    </>
  )
}

/** The pending files above the box: a thumbnail or chip each, its progress, and Remove (Cancel while uploading). */
export function AttachmentTray({ attachments }: { attachments: Attachments }) {
  const { items, remove } = attachments
  const status = items.some((i) => i.status === 'uploading')
    ? `Uploading ${items.filter((i) => i.status === 'uploading').length} file(s)`
    : items.length > 0
      ? `${items.filter((i) => i.status === 'done').length} file(s) attached`
      : ''
  return (
    <div className="w-full basis-full">
      <p className="sr-only" aria-live="polite">
        {status}
      </p>
      {items.length > 0 && (
        <ul aria-label="Attached files" data-testid="attachment-tray" className="flex flex-wrap gap-2 pt-1 pb-1">
          {items.map((item) => (
            <li
              key={item.key}
              data-testid="attachment-chip"
              data-status={item.status}
              className={`flex max-w-64 items-center gap-2 rounded-xl border px-2 py-1 text-sm ${
                item.status === 'failed'
                  ? 'border-red-300 text-red-700 dark:border-red-500/60 dark:text-red-300'
                  : 'border-neutral-200 dark:border-neutral-700'
              }`}
            >
              {item.preview ? (
                // A local object URL: the thumbnail of a file not sent yet.
                <img src={item.preview} alt="" className="size-8 shrink-0 rounded object-cover" />
              ) : (
                <FileIcon />
              )}
              <span className="min-w-0 flex-1">
                <span className="block truncate font-medium" title={item.name}>
                  {item.name}
                </span>
                <span className="block text-xs text-neutral-500 dark:text-neutral-400">
                  {item.status === 'failed' ? <span role="alert">{item.error}</span> : formatSize(item.size)}
                </span>
                {item.status === 'uploading' && (
                  <progress
                    value={item.progress}
                    max={1}
                    aria-label={`Uploading ${item.name}`}
                    className="block h-1 w-full overflow-hidden rounded [&::-webkit-progress-bar]:bg-neutral-200 [&::-webkit-progress-value]:bg-neutral-800"
                  />
                )}
              </span>
              <button
                type="button"
                data-testid="attachment-remove"
                onClick={() => remove(item.key)}
                aria-label={item.status === 'uploading' ? `Cancel upload of ${item.name}` : `Remove ${item.name}`}
                className="inline-flex size-6 shrink-0 items-center justify-center rounded-full text-neutral-500 hover:bg-neutral-100 hover:text-neutral-900 dark:hover:bg-neutral-700 dark:hover:text-neutral-100"
              >
                <span aria-hidden="true">×</span>
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

function FileIcon() {
  return (
    <svg viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth={1.8} className="size-6 shrink-0 text-neutral-500" aria-hidden="true">
      <path d="M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z" />
      <path d="M14 3v5h5" />
    </svg>
  )
}

/** Where a sent file is read: the owner's route, or (a shared link's view) that link's. */
const FileLinks = createContext<(id: string) => string>((id) => `/api/files/${id}`)
export const FileLinksProvider = FileLinks.Provider

/** A sent message's files: images as thumbnails (their own small WebP: the page loads no original), the rest as chips, each a link to the file. */
export function MessageFiles({ files }: { files: FileRef[] }) {
  const hrefOf = useContext(FileLinks)
  return (
    <ul aria-label="Files" data-testid="message-files" className="flex max-w-[85%] flex-wrap justify-end gap-2">
      {files.map((file) => (
        <li key={file.id} data-testid="message-file" data-media-type={file.mediaType}>
          {file.mediaType.startsWith('image/') ? (
            <a href={hrefOf(file.id)} target="_blank" rel="noopener" className="block rounded-xl outline-offset-2">
              {/* A private route, served only after its own check. */}
              <img
                src={`${hrefOf(file.id)}?thumb=1`}
                alt={file.name}
                loading="lazy"
                className="max-h-40 max-w-60 rounded-xl border border-neutral-200 object-cover dark:border-neutral-700"
              />
            </a>
          ) : (
            <a
              href={`${hrefOf(file.id)}?download=1`}
              download={file.name}
              className="flex items-center gap-2 rounded-xl border border-neutral-200 px-3 py-2 text-sm hover:bg-neutral-50 dark:border-neutral-700 dark:hover:bg-neutral-800"
            >
              <FileIcon />
              <span className="max-w-48 truncate font-medium">{file.name}</span>
              <span className="text-xs text-neutral-500 dark:text-neutral-400">
                {file.mediaType === 'application/pdf' ? 'PDF' : 'Text'} · {formatSize(file.size)}
              </span>
            </a>
          )}
        </li>
      ))}
    </ul>
  )
}

/** The first message's files, handed from "/" to the new chat's page with its text (chat-list-store's hand-off). */
const FIRST_FILES_KEY = (id: string) => `a2-first-files:${id}`

export function handOffFirstFiles(sessionId: string, files: readonly FileRef[]): void {
  if (files.length === 0) return
  try {
    sessionStorage.setItem(FIRST_FILES_KEY(sessionId), JSON.stringify(files))
  } catch {
    // No storage: the first message goes without them (they are swept); rare enough to accept.
  }
}

export function takeFirstFiles(sessionId: string): FileRef[] | undefined {
  try {
    const raw = sessionStorage.getItem(FIRST_FILES_KEY(sessionId))
    if (raw === null) return undefined
    sessionStorage.removeItem(FIRST_FILES_KEY(sessionId))
    return JSON.parse(raw) as FileRef[]
  } catch {
    return undefined
  }
}
