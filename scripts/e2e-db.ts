/**
 * Creates (`create`) or drops (`drop NAME`) a throwaway Postgres database for the e2e run,
 * from TEST_DATABASE_URL. `create` prints the new database's URL.
 */
import postgres from 'postgres'

const [command, name = `a2_e2e_${process.pid}`] = process.argv.slice(2)
const base = process.env.TEST_DATABASE_URL
if (!base) throw new Error('TEST_DATABASE_URL is not set')
const admin = postgres(base, { max: 1, onnotice: () => {} })
if (command === 'create') {
  await admin.unsafe(`drop database if exists ${name} with (force)`)
  await admin.unsafe(`create database ${name}`)
  const url = new URL(base)
  url.pathname = `/${name}`
  console.log(url.toString())
} else if (command === 'drop') {
  await admin.unsafe(`drop database if exists ${name} with (force)`)
} else {
  throw new Error('usage: e2e-db create|drop [name]')
}
await admin.end()
