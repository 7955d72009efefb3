import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import type { ConnectionInput } from "../../src/domain/Connection"
import { SqlGuard } from "../../src/governance/sqlguard/SqlGuard"
import { tablePolicyRefusal } from "../../src/governance/TablePolicy"

const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))

const refusal = (connection: ConnectionInput, sql: string) => {
  const checked = guard.check(sql, connection.db_type)
  if (Either.isLeft(checked)) throw new Error(`${sql}: ${checked.left.reason}`)
  return tablePolicyRefusal(checked.right.analysis.tables, connection)
}

const mysql: ConnectionInput = { name: "m", db_type: "mysql", host: "h", database: "shop", username: "u", blocked_tables: ["secrets"] }
const duck: ConnectionInput = { name: "d", db_type: "duckdb", database: "/x.duckdb", allowed_tables: ["main.orders"] }

describe("table policy on every way a statement names a table", () => {
  it("sees a table named by a TABLE body of a set operation", () => {
    expect(refusal(mysql, "select 1 union table secrets")).toMatch(/secrets is blocked/)
    expect(refusal(mysql, "select 1 union table shop.secrets")).toMatch(/blocked/)
    expect(refusal(duck, "select 1 union table secrets")).toMatch(/not on this connection's allow-list/)
  })

  it("qualifies names with the connection's defaults and respects CTE scopes", () => {
    expect(refusal(mysql, "select * from shop.orders")).toBeUndefined()
    // Another database on the same server is outside the connection unless allow-listed; a bare name is refused wherever it could resolve.
    expect(refusal(mysql, "select * from other.secrets")).toMatch(/another database than this connection's \(shop\)/)
    expect(refusal(mysql, "select * from secrets")).toMatch(/blocked/)
    expect(refusal(duck, "with secrets as (select 1) select * from secrets, orders")).toBeUndefined()
    expect(refusal(duck, "with a as (select * from secrets), secrets as (select 1) select * from a")).toMatch(/allow-list/)
  })
})
