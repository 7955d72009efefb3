import { Effect, Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { ConnectionInput, DbType } from "../../src/domain/Connection"
import type { PiiRule } from "../../src/domain/Pii"
import { maskResult } from "../../src/governance/PiiMasking"
import { SqlGuard } from "../../src/governance/sqlguard/SqlGuard"
import { attackPlan, type PiiDialect, piiPlan, type ReadDialect, readOf, render, renderPii } from "./GuardGrammar"

const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))

// fast-check prints the seed and path of a failure; FUZZ_SEED=<seed> replays it.
const seed = Number(process.env["FUZZ_SEED"] ?? Date.now() % 2 ** 31)
const runs = (numRuns: number) => ({ numRuns, seed })

const refused = (sql: string, dbType: DbType) => Either.isLeft(guard.check(sql, dbType))
const refusal = (sql: string, dbType: DbType) => {
  const verdict = guard.check(sql, dbType)
  return Either.isLeft(verdict) ? verdict.left.reason : undefined
}

describe("fuzzed attacks: a dangerous core in any context is refused, and the same context around a harmless core is not", () => {
  const dialects: ReadonlyArray<[DbType, number]> = [
    ["postgresql", 500],
    ["redshift", 300],
    ["duckdb", 500],
    ["mysql", 500],
    ["sqlite", 400],
    ["mssql", 150],
    ["snowflake", 150],
    ["bigquery", 150],
    ["clickhouse", 150],
    ["databricks", 150],
    ["trino", 150]
  ]
  for (const [dbType, numRuns] of dialects) {
    it(dbType, () => {
      fc.assert(
        fc.property(attackPlan(dbType), (plan) => {
          const attack = render(plan, false)!
          expect(refused(attack, dbType), `let through on ${dbType}: ${attack}`).toBe(true)
          const twin = render(plan, true)
          if (twin !== undefined) expect(refusal(twin, dbType), `the harmless twin of ${attack}`).toBeUndefined()
        }),
        runs(numRuns)
      )
    })
  }
})

const RULES: Array<PiiRule> = [
  { table: "customers", column: "email", action: "mask" },
  { table: "customers", column: "ssn", action: "redact" },
  { table: "customers", column: "phone", action: "hash" }
]
const CONNECTIONS: Record<PiiDialect, ConnectionInput> = {
  postgresql: { name: "pg", db_type: "postgresql", host: "h", database: "shop", username: "u" },
  mysql: { name: "my", db_type: "mysql", host: "h", database: "shop", username: "u" },
  duckdb: { name: "duck", db_type: "duckdb", database: "/data/shop.duckdb" },
  sqlite: { name: "lite", db_type: "sqlite", database: "/data/shop.sqlite" }
}
const RAW = "raw-secret-4242@example.org"

describe("fuzzed PII lineage: a PII column carried through any query shape never comes back raw", () => {
  for (const dbType of ["postgresql", "duckdb", "mysql", "sqlite"] as const) {
    it(dbType, () => {
      fc.assert(
        fc.property(piiPlan(dbType), (plan) => {
          const sql = renderPii(plan)
          const checked = guard.check(sql, dbType)
          if (Either.isLeft(checked)) throw new Error(`a read refused on ${dbType}: ${sql}: ${checked.left.reason}`)
          // The statement's columns are p (the PII value, or a value computed from it) and id.
          const result = { columns: [{ name: "p", type: "text" }, { name: "id", type: "text" }], rows: [[RAW, "7"]], truncated: false }
          const masked = maskResult(result, checked.right, RULES, CONNECTIONS[dbType], Buffer.from("fuzz"))
          expect(masked.result.rows[0]!.filter((value) => String(value).includes(RAW)), `raw on ${dbType}: ${sql}`).toEqual([])
        }),
        runs(400)
      )
    })
  }
})

describe("fuzzed reads: allow-listed functions over ordinary columns are never refused", () => {
  for (const dbType of ["postgresql", "redshift", "duckdb", "mysql", "sqlite"] as const satisfies ReadonlyArray<ReadDialect>) {
    it(dbType, () => {
      fc.assert(
        fc.property(readOf(dbType), (sql) => {
          expect(refusal(sql, dbType), `refused on ${dbType}: ${sql}`).toBeUndefined()
        }),
        runs(400)
      )
    })
  }
})
