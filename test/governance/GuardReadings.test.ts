import { describe, expect, it } from "vitest"
import { DIALECTS } from "../../src/governance/sqlguard/Dialects"
import { expandExecutableComments, plainStrings, readsAlike, unicodeSpaceInCode } from "../../src/governance/sqlguard/Lexer"

const rules = (dbType: keyof typeof DIALECTS) => DIALECTS[dbType].lexical

describe("the guard reads a statement as the engine does, and knows when it cannot", () => {
  it("readings agree on plain statements, and disagree where a setting the guard does not know decides", () => {
    expect(readsAlike("select 'it''s' as a, \"b\" from t -- note", rules("snowflake"))).toBe(true)
    // Snowflake's comments may or may not end at a carriage return: what follows one is code under one reading only.
    expect(readsAlike("select 1 -- x\r, secret from t", rules("snowflake"))).toBe(false)
    // SQL Server's QUOTED_IDENTIFIER decides whether "…" is a name or a string.
    expect(readsAlike('select "a\'b", 1', rules("mssql"))).toBe(true)
    expect(readsAlike('select "a" /* "b */ , 1', rules("mysql"))).toBe(true)
    expect(readsAlike('select "a\\" /* ", 1 -- */ "', rules("mysql"))).toBe(false)
    // DuckDB's E'…' is read with and without its escapes (the guard's parser has none): alike only when no escape matters.
    expect(readsAlike("select e'plain' as a", rules("duckdb"))).toBe(true)
    expect(readsAlike("select e'\\'' as a, '-- ' , 1", rules("duckdb"))).toBe(false)
  })

  it("finds a non-ASCII space in code, not in a string, name or comment", () => {
    expect(unicodeSpaceInCode("select 1\u00a0, 2", rules("mysql"))).toBe(8)
    expect(unicodeSpaceInCode("select '\u00a0', `\u00a0` /* \u00a0 */", rules("mysql"))).toBeUndefined()
  })

  it("makes strings' contents plain for a second parse, keeping every offset", () => {
    const sql = "select 'a -- b', $t$/*$t$, '2024-01-01', 'x''y' from t"
    const plain = plainStrings(sql, rules("duckdb"))!
    expect(plain).toBe("select 'a xx b', $t$xx$t$, '2024-01-01', 'xxxy' from t")
    expect(plain.length).toBe(sql.length)
    expect(plainStrings("select 'paid', '2024-01-01' from t", rules("duckdb"))).toBeUndefined()
  })

  it("opens MySQL's executable comments by the tokenizer's own reading, and tells which run by the server's version", () => {
    expect(expandExecutableComments("select /*!40001 SQL_NO_CACHE */ 1", rules("mysql"))).toEqual({ text: "select          SQL_NO_CACHE    1", conditional: false })
    expect(expandExecutableComments("select 1 /*!99999 , 2 */", rules("mysql")).conditional).toBe(true)
    expect(expandExecutableComments("select 1 /*M! , 2 */", rules("mysql")).conditional).toBe(true)
    // A backtick has no escapes: the comment after it is still found.
    expect(expandExecutableComments("select 1 as `a\\`, 2 /*!99999 , 3 */", rules("mysql")).conditional).toBe(true)
    // To any other engine it is a comment.
    expect(expandExecutableComments("select /*! 1 */ 2", rules("duckdb"))).toEqual({ text: "select /*! 1 */ 2", conditional: false })
  })
})
