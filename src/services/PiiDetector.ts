import { Effect, Either } from "effect"
import { InvalidRequest } from "../domain/Errors"
import type { PiiRule } from "../domain/Pii"
import type { Principal } from "../domain/Principal"
import { columnsQuery, quoteIdentifier } from "../governance/Catalog"
import { GovernedExecutor, type GovernedQuery } from "../governance/GovernedExecutor"
import { detectColumn, type PiiFinding } from "../governance/PiiDetection"
import { Connections } from "./Connections"
import { Schemas } from "./Schemas"

const MAX_TABLES = 50
const SAMPLE_ROWS = 100
const TIMEOUT_MS = 30_000

export interface PiiProposal extends PiiFinding {
  readonly table: string
  readonly column: string
}

const quiet = () => Effect.void

/**
 * Proposes PII rules for a connection from its column names and sampled values. The catalog read
 * and every sample go through the governed executor, so blocked tables are skipped and no value
 * leaves this service: only proposals do.
 */
export class PiiDetector extends Effect.Service<PiiDetector>()("sluice/PiiDetector", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections
    const executor = yield* GovernedExecutor
    const schemas = yield* Schemas

    const detect = Effect.fn("PiiDetector.detect")(function* (principal: Principal, name: string, requestId: string) {
      const target = yield* connections.target(principal, name)
      const connection = target.connection
      const catalog = columnsQuery(connection)
      if (catalog === undefined) return yield* new InvalidRequest({ message: "Set the connection's dataset to scan its columns for PII" })
      // The same policy as a query's: views, partitions and children of a blocked table are not sampled either.
      const base = (sql: string, rowLimit: number) =>
        Effect.map(
          schemas.policyFor(target, sql),
          (policy): GovernedQuery => ({
            target,
            pii: policy.pii,
            reached: policy.reached,
            sql,
            rowLimit,
            timeoutMs: TIMEOUT_MS,
            attribution: { keyPrefix: principal.keyPrefix, orgId: principal.orgId, requestId }
          })
        )
      const listed = yield* executor.run(yield* base(catalog, 20_000), quiet)
      const tables = new Map<string, { schema: string; table: string; columns: Array<string> }>()
      for (const [schema, table, column] of listed.rows.map((r) => r.map(String))) {
        const key = `${schema}.${table}`
        if (!tables.has(key) && tables.size >= MAX_TABLES) continue
        const entry = tables.get(key) ?? { schema: schema!, table: table!, columns: [] }
        entry.columns.push(column!)
        tables.set(key, entry)
      }
      const covered = new Set(target.pii.rules.map((r) => `${r.table.split(".").at(-1)!.toLowerCase()}.${r.column.toLowerCase()}`))
      const proposed: Array<PiiProposal> = []
      const skipped: Array<{ table: string; reason: string }> = []
      for (const [key, { schema, table, columns }] of tables) {
        const q = (id: string) => quoteIdentifier(connection.db_type, id)
        const sample = yield* Effect.either(
          Effect.flatMap(base(`select ${columns.map(q).join(", ")} from ${q(schema)}.${q(table)}`, SAMPLE_ROWS), (query) => executor.run(query, quiet))
        )
        if (Either.isLeft(sample)) {
          skipped.push({ table: key, reason: sample.left.message })
          continue
        }
        const names = sample.right.columns.map((c) => c.name)
        columns.forEach((column) => {
          if (covered.has(`${table.toLowerCase()}.${column.toLowerCase()}`)) return
          const index = names.indexOf(column)
          const finding = detectColumn(table, column, index < 0 ? [] : sample.right.rows.map((row) => row[index]))
          if (finding !== undefined) proposed.push({ table: key, column, ...finding })
        })
      }
      return { proposed, scanned_tables: tables.size - skipped.length, skipped }
    })

    /** Detects and adds the proposals to the connection's rules (existing rules are kept as they are). */
    const detectAndSave = Effect.fn("PiiDetector.detectAndSave")(function* (principal: Principal, name: string, requestId: string) {
      const found = yield* detect(principal, name, requestId)
      const current = yield* connections.piiPolicy(principal, name)
      const added: Array<PiiRule> = found.proposed.map((p) => ({ table: p.table, column: p.column, action: p.action }))
      const policy = yield* connections.setPiiRules(principal, name, [...current.rules, ...added])
      return { ...found, policy }
    })

    return { detect, detectAndSave } as const
  }),
  dependencies: [GovernedExecutor.Default]
}) {}
