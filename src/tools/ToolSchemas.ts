import { Schema } from "effect"
import { ConnectionName } from "../domain/Connection"
import { QueryRequest, ROW_LIMITS } from "../domain/Query"

// Inputs several tools share, and how a service error becomes a tool error.

const RowLimit = Schema.Int.pipe(
  Schema.between(1, ROW_LIMITS.mcp.max, { message: () => `row_limit must be an integer between 1 and ${ROW_LIMITS.mcp.max}` })
)

export const QueryInput = Schema.Struct({
  connection_name: ConnectionName.annotations({ description: "The connection to query, as list_connections names it" }),
  sql: QueryRequest.fields.sql.annotations({ description: "One read-only statement (SELECT, WITH … SELECT, EXPLAIN, SHOW) in the connection's dialect" }),
  row_limit: Schema.optionalWith(RowLimit.annotations({ description: "At most this many rows come back (default 1000)" }), { exact: true }),
  timeout_seconds: QueryRequest.fields.timeout_seconds,
  session: QueryRequest.fields.session
}).annotations({ parseOptions: { onExcessProperty: "error" } })

export const NoArguments = Schema.Struct({}).annotations({
  jsonSchema: { type: "object", properties: {}, additionalProperties: false },
  parseOptions: { onExcessProperty: "error" }
})

export const OneConnection = Schema.Struct({
  connection_name: Schema.optionalWith(ConnectionName.annotations({ description: "One connection; all of them when left out" }), { exact: true })
}).annotations({ parseOptions: { onExcessProperty: "error" } })

export const SqlInput = Schema.Struct({
  connection_name: QueryInput.fields.connection_name,
  sql: QueryInput.fields.sql,
  timeout_seconds: QueryInput.fields.timeout_seconds
}).annotations({ parseOptions: { onExcessProperty: "error" } })
