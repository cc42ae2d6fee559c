/**
 * The library stands alone: its source (tests aside) imports packages and lib/a2 only —
 * never the app's db/ (its schema is its own, ./sql) nor other app code under lib/.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = path.join(process.cwd(), 'lib', 'a2')

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sources(full)
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [full] : []
  })
}

/** Static imports, re-exports and dynamic imports. */
const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm

describe('lib/a2 imports', () => {
  it('only packages and lib/a2 itself', () => {
    const outside: string[] = []
    for (const file of sources(ROOT)) {
      for (const [, specifier] of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
        const target = specifier.startsWith('.')
          ? path.resolve(path.dirname(file), specifier)
          : specifier.startsWith('@/')
            ? path.join(process.cwd(), specifier.slice(2))
            : undefined // a package
        if (target !== undefined && !(target + path.sep).startsWith(ROOT + path.sep)) {
          outside.push(`${path.relative(process.cwd(), file)} → ${specifier}`)
        }
      }
    }
    expect(sources(ROOT).length).toBeGreaterThan(20) // it looked
    expect(outside).toEqual([])
  })
})
