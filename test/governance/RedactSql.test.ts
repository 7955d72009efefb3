import { describe, expect, it } from "vitest"
import { redactSqlLiterals } from "../../src/governance/RedactSql"

describe("redactSqlLiterals", () => {
  it.each([
    ["select * from t where email = 'a@b.c'", "select * from t where email = '?'"],
    ["select 'it''s', 'x' from t", "select '?', '?' from t"],
    ["select E'a\\'b' as v", "select E'?' as v"],
    ["select $$secret$$, $tag$ x $ y $tag$", "select '?', '?'"],
    ['select "col\'name" from "t"', 'select "col\'name" from "t"'],
    ["select 1 -- don't\nfrom t", "select 1 -- don't\nfrom t"],
    ["select /* it's */ 'v'", "select /* it's */ '?'"],
    ["select `a'b` from [x'y]", "select `a'b` from [x'y]"],
    ["select 'unterminated", "select '?'"],
    ["select $1, price$ from t", "select $1, price$ from t"]
  ])("%s", (input, expected) => {
    expect(redactSqlLiterals(input)).toBe(expected)
  })
})
