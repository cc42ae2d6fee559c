import type { Metadata, Viewport } from 'next'
import { headers } from 'next/headers'
import { AccountNotice } from '@/components/account-notice'
import { AppShell } from '@/components/app-shell'
import { THEME_SCRIPT } from '@/components/theme-script'
import { ModelsProvider } from '@/components/models'
import { modelList } from '@/lib/ai/model'
import { publicModels } from '@/lib/ai/model-list'
import './globals.css'

export const metadata: Metadata = {
  title: 'a2 chat',
  description: 'A streaming AI chat where Stop really stops the generation.',
  icons: {
    icon:
      'data:image/svg+xml,' +
      encodeURIComponent(
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#171717"/><text x="16" y="21" font-family="system-ui,sans-serif" font-size="14" font-weight="700" fill="#fff" text-anchor="middle">a2</text></svg>',
      ),
  },
}

export const viewport: Viewport = {
  width: 'device-width',
  initialScale: 1,
  themeColor: [
    { media: '(prefers-color-scheme: light)', color: '#ffffff' },
    { media: '(prefers-color-scheme: dark)', color: '#171717' },
  ],
}

export default async function RootLayout({ children }: { children: React.ReactNode }) {
  // The CSP's nonce for this response (proxy.ts): the one inline script must carry it.
  const nonce = (await headers()).get('x-nonce') ?? undefined
  return (
    // The theme script sets the `dark` class before paint, so the server's markup differs on purpose.
    <html lang="en" suppressHydrationWarning>
      <head>
        <script nonce={nonce} dangerouslySetInnerHTML={{ __html: THEME_SCRIPT }} />
      </head>
      <body>
        {/* The picker's list, read per request (the layout is dynamic): ids, labels and capabilities only. */}
        <ModelsProvider models={publicModels(modelList())}>
          <AppShell>{children}</AppShell>
          <AccountNotice />
        </ModelsProvider>
      </body>
    </html>
  )
}
