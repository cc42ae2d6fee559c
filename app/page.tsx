import { NewChat } from '@/components/new-chat'

export default function HomePage() {
  return <NewChat />
}
