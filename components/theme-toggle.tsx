'use client'
import { useEffect, useState } from 'react'
import { THEME_KEY } from './theme-script'
import { MonitorIcon, MoonIcon, SunIcon } from './icons'

type ThemeChoice = 'system' | 'light' | 'dark'

const NEXT: Record<ThemeChoice, ThemeChoice> = { system: 'light', light: 'dark', dark: 'system' }
const LABEL: Record<ThemeChoice, string> = { system: 'System theme', light: 'Light theme', dark: 'Dark theme' }

function readChoice(): ThemeChoice {
  try {
    const stored = localStorage.getItem(THEME_KEY)
    return stored === 'light' || stored === 'dark' ? stored : 'system'
  } catch {
    return 'system'
  }
}

function apply(choice: ThemeChoice) {
  const dark = choice === 'dark' || (choice === 'system' && window.matchMedia('(prefers-color-scheme: dark)').matches)
  document.documentElement.classList.toggle('dark', dark)
}

/** Cycles system → light → dark; "system" follows prefers-color-scheme live. */
export function ThemeToggle({ className = '' }: { className?: string }) {
  const [choice, setChoice] = useState<ThemeChoice | null>(null)

  useEffect(() => {
    setChoice(readChoice())
  }, [])

  useEffect(() => {
    if (choice !== 'system') return
    const media = window.matchMedia('(prefers-color-scheme: dark)')
    const onChange = () => apply('system')
    media.addEventListener('change', onChange)
    return () => media.removeEventListener('change', onChange)
  }, [choice])

  // Another tab changed the theme.
  useEffect(() => {
    const onStorage = (e: StorageEvent) => {
      if (e.key !== THEME_KEY) return
      const next = readChoice()
      setChoice(next)
      apply(next)
    }
    window.addEventListener('storage', onStorage)
    return () => window.removeEventListener('storage', onStorage)
  }, [])

  const current = choice ?? 'system'
  const next = NEXT[current]
  const Icon = current === 'light' ? SunIcon : current === 'dark' ? MoonIcon : MonitorIcon

  return (
    <button
      type="button"
      onClick={() => {
        try {
          if (next === 'system') localStorage.removeItem(THEME_KEY)
          else localStorage.setItem(THEME_KEY, next)
        } catch {
          // storage unavailable: the choice lasts for this page only
        }
        setChoice(next)
        apply(next)
      }}
      aria-label={`${LABEL[current]} (switch to ${LABEL[next].toLowerCase()})`}
      title={`${LABEL[current]} — click for ${LABEL[next].toLowerCase()}`}
      className={`inline-flex size-9 items-center justify-center rounded-lg text-neutral-500 transition hover:bg-neutral-100 hover:text-neutral-900 dark:text-neutral-400 dark:hover:bg-neutral-800 dark:hover:text-neutral-100 ${className}`}
    >
      <Icon className="size-[18px]" />
    </button>
  )
}
