import { describe, expect, it } from "vitest"
import { cteAlone, splitCtes } from "../../src/governance/CteSplit"

describe("splitCtes: the CTEs of a WITH statement, cut by the dialect's tokens", () => {
  it("cuts each CTE with its column list and materialization, ignoring parentheses in strings and comments", () => {
    const sql = `WITH a (x) AS (SELECT ')' AS x /* ( */), "B c" AS MATERIALIZED (SELECT x FROM a WHERE x <> '(')
      , d AS NOT MATERIALIZED (SELECT count(*) FROM "B c") SELECT * FROM d`
    const list = splitCtes(sql, "postgresql")!
    expect(list.recursive).toBe(false)
    expect(list.ctes.map((c) => c.name)).toEqual(["a", '"B c"', "d"])
    expect(list.ctes[0]!.text).toBe("a (x) AS (SELECT ')' AS x /* ( */)")
    expect(cteAlone(list, 1)).toBe(`WITH a (x) AS (SELECT ')' AS x /* ( */),\n"B c" AS MATERIALIZED (SELECT x FROM a WHERE x <> '(')\nSELECT * FROM "B c"`)
  })

  it("keeps RECURSIVE, reads each dialect's quoting, and says undefined when there is nothing to cut", () => {
    expect(splitCtes("with recursive t(n) as (select 1 union all select n + 1 from t where n < 3) select * from t", "postgresql")?.recursive).toBe(true)
    expect(splitCtes("WITH `x` AS (SELECT ')' ) SELECT * FROM `x`", "mysql")?.ctes.map((c) => c.name)).toEqual(["`x`"])
    expect(splitCtes("WITH [x] AS (SELECT 1) SELECT * FROM [x]", "mssql")?.ctes.map((c) => c.name)).toEqual(["[x]"])
    expect(splitCtes("SELECT 1", "postgresql")).toBeUndefined()
    // ClickHouse's WITH <expression> AS <name> is not a table expression.
    expect(splitCtes("WITH 1 + 1 AS two SELECT two", "clickhouse")).toBeUndefined()
    expect(splitCtes("WITH a AS (SELECT 1", "postgresql")).toBeUndefined()
  })
})
