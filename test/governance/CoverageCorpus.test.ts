import * as path from "node:path"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { directoryFiles } from "../../layers/ProjectFiles"
import { scanDbtProject } from "../../src/schema/DbtProjectScan"
import { modelCoverage } from "../../src/domain/EvalCoverage"
import { parsableRedacted, redactSqlLiterals } from "../../src/governance/RedactSql"
import { relationsRead } from "../../src/governance/RelationsRead"
import { SqlGuard } from "../../src/governance/sqlguard/SqlGuard"
import type { DbType } from "../../src/domain/Connection"

const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))
const project = (await scanDbtProject(directoryFiles(path.join(import.meta.dirname, "../fixtures/dbt/jaffle"))))!

const MODELS = ["stg_customers", "stg_orders", "int_orders_joined", "dim_customers", "fct_orders"] as const
type Model = (typeof MODELS)[number]

/** Statements an agent might send, each with the project's models it reads (and nothing else: sources, aliases, CTEs, columns and strings named like models are not reads). */
const templates: Array<(m: Model, n: Model) => [string, ReadonlyArray<Model>]> = [
  (m) => [`select * from ${m}`, [m]],
  (m) => [`select count(*) from analytics.${m} where amount > 100.5 and status = 'paid'`, [m]],
  (m) => [`select * from "analytics"."${m}" limit 10`, [m]],
  (m) => [`select * from warehouse.analytics.${m} t where t.id > 3`, [m]],
  (m) => [`select * from ANALYTICS.${m.toUpperCase()}`, [m]],
  (m, n) => [`select a.*, b.* from ${m} a join ${n} b on a.id = b.id`, [m, n]],
  (m, n) => [`select * from ${m} left join analytics.${n} using (customer_id)`, [m, n]],
  (m, n) => [`select * from ${m} where customer_id in (select customer_id from ${n})`, [m, n]],
  (m, n) => [`select * from (select * from ${m}) as ${n}`, [m]],
  (m) => [`with ${m} as (select * from raw.orders) select * from ${m}`, []],
  (m, n) => [`with recent as (select * from ${m} where ordered_at > now() - interval '7 days') select * from recent join ${n} on true`, [m, n]],
  (m, n) => [`with a as (select * from ${m}), b as (select * from a) select * from b where exists (select 1 from ${n})`, [m, n]],
  (m) => [`select '${m}' as name, count(*) from raw.customers`, []],
  (m) => [`select ${m} from raw.orders`, []],
  (m) => [`select * from raw.orders as ${m}`, []],
  (m) => [`-- from ${m}\nselect 1`, []],
  (m) => [`select /* join ${m} */ * from raw.customers`, []],
  (m, n) => [`select * from ${m} union all select * from ${n}`, [m, n]],
  (m, n) => [`select * from ${m} except select * from ${n}`, [m, n]],
  (m) => [`select x.total from lateral_stuff x, ${m}`, [m]],
  (m, n) => [`select (select max(amount) from ${m}) as top, (select min(amount) from ${n}) as bottom`, [m, n]],
  (m) => [`select * from ${m}_archive`, []],
  (m) => [`select * from ${m}_v2 join raw.orders on true`, []],
  (m) => [`select "${m}".id from "${m}"`, [m]],
  (m) => [`explain select * from ${m}`, [m]]
]

/** 100 statements: each template over the models in turn, with another model beside it. */
const corpus = Array.from({ length: 100 }, (_, i) => {
  const m = MODELS[i % MODELS.length]!
  const n = MODELS[(i + 2) % MODELS.length]!
  const [sql, reads] = templates[i % templates.length]!(m, n)
  return { sql, reads: [...new Set(reads)].sort() }
})

describe("observed coverage read from SQL with the guard's parsers", () => {
  it("finds every model a statement of the 100 reads and no other, on PostgreSQL's grammar and on sqlparser's (Snowflake), as sent and as the audit log keeps it (values redacted)", () => {
    expect(project.models.map((model) => model.name).sort()).toEqual([...MODELS].sort())
    for (const dbType of ["postgresql", "snowflake"] as ReadonlyArray<DbType>) {
      for (const { sql, reads } of corpus) {
        for (const text of [sql, parsableRedacted(redactSqlLiterals(sql, dbType), dbType)]) {
          const { relations, unparsed } = relationsRead(guard, [text], dbType)
          expect(unparsed, `${dbType}: ${text}`).toBe(0)
          const found = modelCoverage(project.models, [], relations, { rowsRead: 1, capped: false, unparsed }).models.map((model) => model.name)
          expect(found, `${dbType}: ${text}`).toEqual(reads)
        }
      }
    }
  })

  it("counts (declared ∪ observed) over the project's models, by layer; names match by their last segment, lower-cased; sources and unknown names count for nothing", () => {
    const { relations, unparsed } = relationsRead(guard, ["select * from analytics.fct_orders", "select * from raw.customers", "select nonsense from"], "postgresql")
    const coverage = modelCoverage(project.models, ["analytics.STG_ORDERS", "stg_orders", "raw.orders", "customers_by_day"], relations, { rowsRead: 3, capped: false, unparsed })
    expect(coverage).toEqual({
      overall: { covered: 2, total: 5, percent: 40 },
      staging: { covered: 1, total: 2, percent: 50 },
      intermediate: { covered: 0, total: 1, percent: 0 },
      marts: { covered: 1, total: 2, percent: 50 },
      models: [
        { name: "fct_orders", declared: false, observed: true },
        { name: "stg_orders", declared: true, observed: false }
      ],
      audit_rows_read: 3,
      audit_rows_capped: false,
      statements_unparsed: 1
    })
  })
})
