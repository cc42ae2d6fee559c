// The bench's bare page (figure 13's baseline): the same next/react as the app, nothing else.
export const metadata = { title: 'bare page', description: 'Three questions and answers and a composer, rendered in the browser.' }

export default function RootLayout({ children }) {
  return (
    <html lang="en">
      <body style={{ margin: 0, fontFamily: 'system-ui, sans-serif', lineHeight: 1.5, color: '#171717', background: '#fff' }}>{children}</body>
    </html>
  )
}
