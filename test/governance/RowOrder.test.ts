import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import type { DbType } from "../../src/domain/Connection"
import { queryShapeOf } from "../../src/governance/lineage/QueryShapeOf"
import { inTotalOrder, outputCount } from "../../src/governance/RowOrder"
import { DIALECTS } from "../../src/governance/sqlguard/Dialects"
import { SqlGuard } from "../../src/governance/sqlguard/SqlGuard"

const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))
const COLUMNS: Record<string, number> = { signups: 4, orders: 3 }

const ordered = (sql: string, dbType: DbType = "postgresql") => {
  const checked = Either.getOrThrow(guard.check(sql, dbType))
  const outer = () => outputCount(queryShapeOf(checked), (parts) => COLUMNS[parts.at(-1)!.toLowerCase()])
  return Either.map(inTotalOrder(sql, DIALECTS[dbType], outer), (o) => o.sql)
}
const refusal = (sql: string, dbType: DbType = "postgresql") => Either.flip(ordered(sql, dbType)).pipe(Either.map((r) => r.reason), Either.getOrElse(() => "(ran)"))

describe("rows over PII are put in an order of their own values", () => {
  it("the outer query is ordered by every output after the caller's keys, before its limit", () => {
    expect(ordered("select id, country from signups")).toEqual(Either.right("select id, country from signups order by 1, 2"))
    expect(ordered("select id from signups order by country desc nulls last limit 2 offset 1;")).toEqual(Either.right("select id from signups order by country desc nulls last, 1 limit 2 offset 1;"))
    expect(ordered("select id from signups union select id from orders limit 3")).toEqual(Either.right("select id from signups union select id from orders order by 1 limit 3"))
    expect(ordered("select * from signups s join orders o on o.id = s.id")).toEqual(Either.right("select * from signups s join orders o on o.id = s.id order by 1, 2, 3, 4, 5, 6, 7"))
    expect(ordered("with w as (select id, country from signups) select w.*, 1 from w")).toEqual(Either.right("with w as (select id, country from signups) select w.*, 1 from w order by 1, 2, 3"))
    expect(ordered("select id from signups limit (select count(*) from orders)")).toEqual(Either.right("select id from signups order by 1 limit (select count(*) from orders)"))
    expect(ordered("select format('%s', id) from signups")).toEqual(Either.right("select format('%s', id) from signups order by 1"))
    expect(ordered("select id from signups limit 2", "mysql")).toEqual(Either.right("select id from signups order by 1 limit 2"))
    // DuckDB orders by every output column without counting them: a PIVOT's are known only when it runs.
    expect(ordered("select * from signups limit 2", "duckdb")).toEqual(Either.right("select * from signups order by all limit 2"))
    expect(ordered("pivot signups on country using count(*)", "duckdb")).toEqual(Either.right("pivot signups on country using count(*) order by all"))
  })

  it("a level that keeps some of its rows is ordered too; one that keeps them all is left as written", () => {
    expect(ordered("select id from (select id from signups limit 1) t")).toEqual(Either.right("select id from (select id from signups order by 1 limit 1) t order by 1"))
    expect(ordered("select n from (select distinct on (country) country, id as n from signups order by country) t")).toEqual(
      Either.right("select n from (select distinct on (country) country, id as n from signups order by country, 1, 2) t order by 1")
    )
    expect(ordered("select id from signups where id in (select id from orders)")).toEqual(Either.right("select id from signups where id in (select id from orders) order by 1"))
    // SQLite answers a scalar subquery with its first row.
    expect(ordered("select (select id from signups), x from (select id as x from orders) o", "sqlite")).toEqual(Either.right("select (select id from signups order by 1), x from (select id as x from orders) o order by 1, 2"))
    expect(ordered("select 1, (select id from signups) from orders, (select id from signups) s", "sqlite")).toEqual(Either.right("select 1, (select id from signups order by 1) from orders, (select id from signups) s order by 1, 2"))
  })

  it("a listing aggregate lists its values in their own order after the caller's", () => {
    expect(ordered("select country, string_agg(email, ',') from signups group by country")).toEqual(Either.right("select country, string_agg(email, ',' order by email) from signups group by country order by 1, 2"))
    expect(ordered("select array_agg(distinct id order by id desc) filter (where id > 1) from signups")).toEqual(Either.right("select array_agg(distinct id order by id desc, id) filter (where id > 1) from signups order by 1"))
    expect(ordered("select json_object_agg(id, email) from signups")).toEqual(Either.right("select json_object_agg(id, email order by id, email) from signups order by 1"))
    expect(ordered("select group_concat(id, email separator ';') from signups", "mysql")).toEqual(Either.right("select group_concat(id, email order by id, email separator ';') from signups order by 1"))
    expect(ordered("select group_concat(email, ';') from signups", "sqlite")).toEqual(Either.right("select group_concat(email, ';' order by email) from signups order by 1"))
  })

  it("a window that numbers rows, or counts them by position, is ordered by the level's outputs and its own arguments after the caller's keys", () => {
    expect(ordered("select id, row_number() over (partition by country order by id desc) as n from signups")).toEqual(
      Either.right("select id, row_number() over (partition by country order by id desc, id) as n from signups order by 1, 2")
    )
    expect(ordered('select country, pg_catalog."row_number"() over () from signups')).toEqual(Either.right('select country, pg_catalog."row_number"() over ( order by country ) from signups order by 1, 2'))
    expect(ordered("select id, lag(country, 1) over (order by id) from signups")).toEqual(Either.right("select id, lag(country, 1) over (order by id, id, country) from signups order by 1, 2"))
    expect(ordered("select id, sum(id) over (rows (1000) preceding) s from signups")).toEqual(Either.right("select id, sum(id) over ( order by id, id rows (1000) preceding) s from signups order by 1, 2"))
    expect(ordered("select id, first_value(country) over (partition by id order by id rows between 1 preceding and current row) from signups")).toEqual(
      Either.right("select id, first_value(country) over (partition by id order by id, id, country rows between 1 preceding and current row) from signups order by 1, 2")
    )
    // Ranks, and aggregates over a RANGE or GROUPS frame, take tied rows together: left as written.
    expect(ordered("select id, rank() over (order by country), sum(id) over (order by country) from signups")).toEqual(
      Either.right("select id, rank() over (order by country), sum(id) over (order by country) from signups order by 1, 2, 3")
    )
  })

  it("refuses what no order of its own makes depend on values alone, saying what to use", () => {
    expect(refusal("select any_value(id) from signups", "duckdb")).toMatch(/^any_value gives a value/)
    expect(refusal("select id, first_value(country) over (order by id) from signups")).toMatch(/^first_value over a RANGE, GROUPS or default frame .*: give it a ROWS frame/)
    expect(refusal("select id, row_number() over w from signups window w as (order by id)")).toMatch(/^a named window keeps tied rows/)
    expect(refusal("select *, row_number() over (order by id) from signups")).toMatch(/^row_number takes tied rows .* a \*/)
    expect(refusal("select string_agg(email, ',') over (partition by country) from signups")).toMatch(/^string_agg over a window/)
    expect(refusal("select * from (select * from signups limit 2) s")).toMatch(/cannot count this query's columns/)
    expect(refusal("select * from signups join orders using (id)")).toMatch(/cannot count this query's columns/)
    expect(refusal("select * from generate_series(1, 3) g")).toMatch(/cannot count this query's columns/)
    // MySQL and SQLite answer a column neither grouped nor aggregated from a row of the group.
    for (const dbType of ["mysql", "sqlite"] as const) {
      expect(refusal("select country, id from members group by country", dbType)).toMatch(/^id is neither grouped nor aggregated: .*: group by id, or aggregate it/)
      expect(refusal("select max(country), m.id + 1 from members m", dbType)).toMatch(/^id is neither grouped/)
      expect(refusal("select country, (select max(total) from orders o where o.id = m.id) from members m group by country", dbType)).toMatch(/^m\.id is neither grouped/)
      expect(refusal("select * from members group by country", dbType)).toMatch(/^\* is neither grouped/)
      // MySQL groups by a table's column before an alias of the same name; a key is trusted as a column only.
      expect(refusal("select country as c, id as country from members group by country", dbType)).toMatch(/^id is neither grouped/)
      expect(refusal("select country c, sum(id) from members group by c", dbType)).toMatch(/^country is neither grouped/)
      expect(refusal("select max(country), t.date from (select id as date, country from members) t", dbType)).toMatch(/^date is neither grouped/)
      expect(refusal(`select ${dbType === "mysql" ? "json_arrayagg(country)" : "string_agg(country, ',')"}, id from members`, dbType)).toMatch(/^id is neither grouped/)
      // A string may be a column's alias; only a literal type's word (`date '…'`) makes the word before a string no column.
      expect(refusal("select email 'e' from signups group by country", dbType)).toMatch(/^email is neither grouped/)
      expect(refusal("select email 'e', count(*) from signups group by email", dbType)).toBe("(ran)")
      for (const sql of [
        "select country, count(*) from members group by country",
        "select m.country as c, count(*) n, max(id) from members m group by m.country",
        "select upper(country), count(*) from members group by country",
        "select country, count(*) from members group by 1 having count(*) > 1",
        "select country, (select count(*) from orders o where o.id > 2) from members group by country",
        "select id, country from members",
        "select country, count(*) from members where id > 1 and country <> date '2024-01-01' group by country",
        "select m.id, (select count(*) from members n where n.handle < m.handle) from members m"
      ]) {
        expect([sql, refusal(sql, dbType)]).toEqual([sql, "(ran)"])
      }
    }
    // Seventh attack: a quoted or qualified name is the function; a frame's extent can be any expression; a seed orders a sequence.
    expect(refusal('select "first"(id) from signups', "duckdb")).toMatch(/^first gives/)
    expect(refusal("select arg_min_null(id, country) from signups", "duckdb")).toMatch(/^arg_min_null gives/)
    expect(refusal("select id from members order by rand(1)", "mysql")).toMatch(/^rand with a seed/)
    expect(ordered('select "string_agg"(email, \',\') from signups')).toEqual(Either.right('select "string_agg"(email, \',\' order by email) from signups order by 1'))
    expect(ordered("select array(select id from signups) as a")).toEqual(Either.right("select array(select id from signups order by 1) as a order by 1"))
    // An alias list may rename the first columns only.
    expect(ordered("select * from (select country, id from signups) t(a)")).toEqual(Either.right("select * from (select country, id from signups) t(a) order by 1, 2"))
    expect(ordered("with c(a) as (select country, id from signups) select * from c")).toEqual(Either.right("with c(a) as (select country, id from signups) select * from c order by 1, 2"))
    // Ranks, RANGE frames and FETCH … ROWS are alike for rows that tie.
    expect(refusal("select rank() over (order by country), sum(id) over (order by country range between unbounded preceding and current row) from signups offset 1 rows fetch first 2 rows only")).toBe("(ran)")
    expect(refusal("select rand() as r, id from signups order by rand()", "mysql")).toBe("(ran)")
  })

  it("a refusal's recorded form, which the audit log keeps, quotes nothing of the statement; MySQL reads \"…\" as the string it is", () => {
    // The MySQL connector pins "…" to a string (no ANSI_QUOTES): a constant, neither grouped nor a column.
    expect(ordered('select "SSN-123-45-6789", count(*) from members', "mysql")).toEqual(Either.right('select "SSN-123-45-6789", count(*) from members order by 1, 2'))
    expect(refusal('select email "e", count(*) from signups group by country', "mysql")).toMatch(/^email is neither grouped/)
    // SQLite reads "…" as a column where one has that name, and as a string otherwise: refused, its value told to the caller only.
    const refused = Either.getOrThrow(Either.flip(ordered('select "SSN-123-45-6789", count(*) from members', "sqlite")))
    expect(refused.reason).toMatch(/^"SSN-123-45-6789" is neither grouped nor aggregated/)
    expect(refused.recorded).toMatch(/^a column is neither grouped nor aggregated/)
    for (const [sql, dbType] of [
      ["select country, id from members group by country", "mysql"],
      ["select country, (select max(total) from orders o where o.id = m.id) from members m group by country", "sqlite"],
      ["select id from members order by rand(1)", "mysql"],
      ['select "first"(id) from signups', "duckdb"],
      ["select * from (select * from signups limit 2) s", "postgresql"]
    ] as const) {
      const { recorded } = Either.getOrThrow(Either.flip(ordered(sql, dbType)))
      expect([sql, recorded.match(/\b(id|m\.id|country|members|signups)\b/)?.[0]]).toEqual([sql, undefined])
    }
  })
})
