import type { SqlClient } from "@effect/sql"
import { Context, Effect } from "effect"
import type { AuditInsert } from "./AuditInsert"

/**
 * The audit row of a request that may change state. The first tenant transaction of the request
 * that writes anything also writes this row, so no change is ever committed without its record; the
 * request completes the row (status, duration) when it answers.
 */
export interface ChangeRecord {
  /** The row as known so far, storable, with a null status: the change is committed, the answer not yet given. */
  readonly row: () => AuditInsert
  state: { readonly _tag: "open" } | { readonly _tag: "written"; readonly id: string } | { readonly _tag: "closed" }
}

export class PendingChange extends Context.Tag("sluice/PendingChange")<PendingChange, ChangeRecord>() {}

const COLUMN_TYPES: ReadonlyArray<readonly [keyof AuditInsert, string]> = [
  ["timestamp", "bigint"],
  ["org_id", "text"],
  ["principal", "text"],
  ["key_id", "text"],
  ["user_id", "text"],
  ["event_type", "text"],
  ["method", "text"],
  ["route", "text"],
  ["status", "integer"],
  ["connection", "text"],
  ["sql", "text"],
  ["outcome", "text"],
  ["block_reason", "text"],
  ["rows", "integer"],
  ["duration_ms", "float8"],
  ["client_ip", "text"],
  ["user_agent", "text"],
  ["request_id", "text"],
  ["details", "jsonb"]
]

/**
 * Inside a tenant transaction: writes the pending request's row if the transaction has written
 * anything (PostgreSQL assigns a transaction id at its first write), in one statement.
 */
export const recordChange = (sql: SqlClient.SqlClient) =>
  Effect.flatMap(Effect.serviceOption(PendingChange), (pending) => {
    if (pending._tag === "None" || pending.value.state._tag !== "open") return Effect.void
    const record = pending.value
    const row = record.row()
    const values = COLUMN_TYPES.map(([column, type]) => {
      const value = column === "details" && row.details !== null ? JSON.stringify(row.details) : row[column]
      return sql`${value}::${sql.unsafe(type)}`
    })
    return sql<{ id: string }>`insert into gateway_audit_logs (${sql.unsafe(COLUMN_TYPES.map(([c]) => `"${c}"`).join(", "))})
      select ${sql.csv(values)} where pg_current_xact_id_if_assigned() is not null returning id::text as id`.pipe(
      Effect.map((rows) => {
        if (rows[0] !== undefined && record.state._tag === "open") record.state = { _tag: "written", id: rows[0].id }
      })
    )
  })
