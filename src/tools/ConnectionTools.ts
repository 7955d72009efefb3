import { Effect, Schema } from "effect"
import { capabilitiesOf } from "../../layers/connectors/Connectors"
import { Capabilities, DB_TYPES, DbType } from "../domain/Connection"
import { ConnectionHealth as ConnectionHealthSchema } from "../domain/ConnectionHealth"
import { ConnectionHealth } from "../services/ConnectionHealth"
import { Connections } from "../services/Connections"
import { defineTool, READ_ONLY, type ToolDefinition } from "./ToolDefinition"
import { NoArguments, OneConnection } from "./ToolSchemas"

const ListedConnection = Schema.Struct({
  name: Schema.String,
  db_type: DbType,
  description: Schema.NullOr(Schema.String),
  tags: Schema.Array(Schema.String),
  database: Schema.NullOr(Schema.String)
})

/** What connections there are and whether they answer. */
export const connectionTools = Effect.gen(function* () {
  const connections = yield* Connections
  const health = yield* ConnectionHealth

  const listConnections = defineTool({
    name: "list_connections",
    scope: "read",
    title: "List connections",
    description:
      "Lists the databases this key can query: each connection's name (pass it as connection_name to the other tools), its SQL dialect (db_type), description, tags and database. Start here.",
    input: NoArguments,
    output: Schema.Struct({ connections: Schema.Array(ListedConnection) }),
    annotations: READ_ONLY,
    run: (_, call) =>
      Effect.gen(function* () {
        const page = yield* connections.list(call.principal, { limit: 1000 })
        const listed = page.items.map((c) => ({
          name: c.name,
          db_type: c.db_type,
          description: c.description,
          tags: c.tags,
          database: c.database ?? null
        }))
        const text =
          listed.length === 0
            ? "No connections yet: an admin adds them in the web app or with POST /api/connections."
            : listed.map((c) => `- ${c.name} (${c.db_type})${c.description ? `: ${c.description}` : ""}`).join("\n")
        return { text, structured: { connections: listed } }
      })
  })

  const connectorCapabilities = defineTool({
    name: "connector_capabilities",
    scope: "read",
    title: "What a connection's connector can do",
    description:
      "Tells what the connector behind a connection (or every connector of this build) supports: driver, how read-only is enforced, server-side cancel, TLS, SSH tunnels, and the row-limit syntax (LIMIT, TOP or FETCH FIRST) its SQL uses.",
    input: OneConnection,
    output: Schema.Struct({ connectors: Schema.Array(Capabilities) }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const types = args.connection_name === undefined ? DB_TYPES : [(yield* connections.get(call.principal, args.connection_name)).db_type]
        const listed = types.map(capabilitiesOf)
        const text = listed
          .map((c) => (c.available ? `- ${c.db_type}: ${c.driver} over ${c.transport}; read-only by ${c.read_only_guard}; limits with ${c.limit_syntax}` : `- ${c.db_type}: not available in this build`))
          .join("\n")
        return { text, structured: { connectors: listed } }
      })
  })

  const connectionHealth = defineTool({
    name: "connection_health",
    scope: "read",
    title: "Connection health",
    description:
      "Shows whether connections are reachable: status (healthy, degraded, unhealthy), the last check and its latency, and the step that failed (dns, tcp, tls, auth…). Use it when a query fails with database_unavailable.",
    input: OneConnection,
    output: Schema.Struct({ connections: Schema.Array(ConnectionHealthSchema) }),
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const listed =
          args.connection_name === undefined ? (yield* health.list(call.principal)).items : [yield* health.of(call.principal, args.connection_name)]
        const text = listed.length === 0 ? "No connections yet." : listed.map((h) => `- ${h.name}: ${JSON.stringify(h)}`).join("\n")
        return { text, structured: { connections: listed } }
      })
  })

  const tools: ReadonlyArray<ToolDefinition> = [listConnections, connectionHealth, connectorCapabilities]
  return tools
})
