import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { summarizePlan } from "../../src/governance/ExplainPlan"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

describe("the rows a PostgreSQL plan reads, from the engine's own EXPLAIN (what an agent's query is priced by)", () => {
  let database: TestDatabase
  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table big (id int primary key, v int); insert into big select g, g % 7 from generate_series(1, 100000) g; analyze big")
  })
  afterAll(() => database?.drop())

  const scanned = async (sql: string) => {
    const [row] = await database.query<{ plan: unknown }>(`explain (format json) ${sql}`)
    return summarizePlan("postgresql", { columns: [{ name: "QUERY PLAN", type: "json" }], rows: [[row!["QUERY PLAN" as "plan"]]], truncated: false }).scanned_rows!
  }

  it.skipIf(skip)("a Limit over a scan reads a few rows; over a sort or an aggregate, everything below it", async () => {
    expect(await scanned("select * from big")).toBe(100000)
    expect(await scanned("select * from big limit 6")).toBeLessThan(100)
    // A sort or an aggregate reads everything before its first row; a parallel scan's rows per process add up to the table.
    for (const sql of ["select * from big order by v limit 6", "select v, count(*) from big group by v limit 6", "select count(distinct v) from big limit 2", "select count(*) from big"]) {
      const rows = await scanned(sql)
      expect(rows, sql).toBeGreaterThan(95_000)
      expect(rows, sql).toBeLessThan(105_000)
    }
  })

  it.skipIf(skip)("a nested loop's inner side is read once per outer row", async () => {
    await database.query("create table small (id int); insert into small select generate_series(1, 50); analyze small")
    expect(await scanned("select count(*) from small a, small b, small c")).toBeGreaterThanOrEqual(50 ** 3)
  })
})
