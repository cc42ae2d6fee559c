import { describe, expect, it } from 'vitest'
import { splitStatements } from './internal/store/split-sql'
import { MIGRATIONS } from './sql'

describe('splitStatements', () => {
  it('ends a statement at a semicolon outside comments, quotes and dollar-quoted bodies', () => {
    const text = `
      -- a comment; with a semicolon
      create table t (a text default 'x;y', "b;c" int); /* block; comment */
      create function f() returns void language plpgsql as $$
      begin perform 1; end
      $$;
      create function g() returns text language sql as $body$ select 'it''s; $$ fine' $body$;
      -- trailing comment only`
    expect(splitStatements(text)).toEqual([
      `-- a comment; with a semicolon\n      create table t (a text default 'x;y', "b;c" int);`,
      `/* block; comment */\n      create function f() returns void language plpgsql as $$\n      begin perform 1; end\n      $$;`,
      `create function g() returns text language sql as $body$ select 'it''s; $$ fine' $body$;`,
    ])
  })

  it('refuses an unterminated quote rather than guessing', () => {
    expect(() => splitStatements(`select 'open;`)).toThrow(/unterminated/)
  })

  it("splits a2's migrations into the statements they hold", () => {
    const count = (id: number) => splitStatements(MIGRATIONS.find((m) => m.id === id)!.sql).length
    // 0001: five tables, their nine indexes; 0002: two functions; 0003: one table; 0004: a
    // column and its backfill, two trigger functions and their triggers, three index changes.
    expect(count(1)).toBe(14)
    expect(count(2)).toBe(2)
    expect(count(3)).toBe(1)
    expect(count(4)).toBe(9)
  })
})
