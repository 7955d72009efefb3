import { Effect, Either } from "effect"
import type { PiiRule } from "../domain/Pii"
import type { Principal } from "../domain/Principal"
import { quoteIdentifier } from "../governance/Catalog"
import { CatalogReader } from "../governance/CatalogReader"
import { detectColumn, type PiiFinding } from "../governance/PiiDetection"
import { Connections } from "./Connections"
import { type ChildQueryContext, Queries } from "./Queries"

const MAX_TABLES = 50
const SAMPLE_ROWS = 100

export interface PiiProposal extends PiiFinding {
  readonly table: string
  readonly column: string
}

/**
 * Proposes PII rules for a connection from its column names and sampled values. The column list
 * comes from the catalog reader (metadata only); every sample is a governed query like any other
 * (blocked tables refused, budgets charged, each audited under the request), and no value leaves
 * this service: only proposals do.
 */
export class PiiDetector extends Effect.Service<PiiDetector>()("sluice/PiiDetector", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections
    const catalog = yield* CatalogReader
    const queries = yield* Queries

    const detect = Effect.fn("PiiDetector.detect")(function* (principal: Principal, name: string, context: ChildQueryContext) {
      const target = yield* connections.target(principal, name)
      const connection = target.connection
      const listed = yield* catalog.columns(target)
      const tables = new Map<string, { schema: string; table: string; columns: Array<string> }>()
      for (const [schema, table, column] of listed) {
        const key = `${schema}.${table}`
        if (!tables.has(key) && tables.size >= MAX_TABLES) continue
        const entry = tables.get(key) ?? { schema, table, columns: [] }
        entry.columns.push(column)
        tables.set(key, entry)
      }
      const covered = new Set(target.pii.rules.map((r) => `${r.table.split(".").at(-1)!.toLowerCase()}.${r.column.toLowerCase()}`))
      const proposed: Array<PiiProposal> = []
      const skipped: Array<{ table: string; reason: string }> = []
      for (const [key, { schema, table, columns }] of tables) {
        const q = (id: string) => quoteIdentifier(connection.db_type, id)
        const sql = `select ${columns.map(q).join(", ")} from ${q(schema)}.${q(table)}`
        // Each sample's share of the result memory goes back as soon as it is read.
        const sample = yield* Effect.either(
          Effect.scoped(queries.runChild(principal, name, sql, SAMPLE_ROWS, context))
        )
        if (Either.isLeft(sample)) {
          // A spent budget ends the scan for every table after it too.
          if (sample.left._tag === "BudgetExhausted") return yield* sample.left
          skipped.push({ table: key, reason: sample.left.message })
          continue
        }
        const names = sample.right.columns.map((c) => c.name)
        columns.forEach((column) => {
          if (covered.has(`${table.toLowerCase()}.${column.toLowerCase()}`)) return
          const index = names.indexOf(column)
          const finding = detectColumn(table, column, index < 0 ? [] : sample.right.rows.map((row) => row[index]), sample.right.columns[index]?.type)
          if (finding !== undefined) proposed.push({ table: key, column, ...finding })
        })
      }
      return { proposed, scanned_tables: tables.size - skipped.length, skipped }
    })

    /** Detects and adds the proposals to the connection's rules (existing rules are kept as they are). */
    const detectAndSave = Effect.fn("PiiDetector.detectAndSave")(function* (principal: Principal, name: string, context: ChildQueryContext) {
      const found = yield* detect(principal, name, context)
      const current = yield* connections.piiPolicy(principal, name)
      const added: Array<PiiRule> = found.proposed.map((p) => ({ table: p.table, column: p.column, action: p.action }))
      const policy = yield* connections.setPiiRules(principal, name, [...current.rules, ...added])
      return { ...found, policy }
    })

    return { detect, detectAndSave } as const
  }),
  dependencies: [CatalogReader.Default, Connections.Default, Queries.Default]
}) {}
