/**
 * The app's mail transport: messages are written to the mail_outbox table, not sent. This
 * app ships no mail server; a deployment delivers the rows (a job reading the table) or
 * swaps this module for its provider. The UI says a message was queued, never "sent".
 */
import { mailOutbox } from '@/db/schema'
import { getStore } from '@/lib/store'

export interface Mail {
  to: string
  subject: string
  text: string
  /** The link the message exists to carry (verify, reset). */
  link: string
}

export async function queueMail(mail: Mail): Promise<void> {
  const store = await getStore()
  await store.db.insert(mailOutbox).values(mail)
}
