import { Layer } from "effect"
import { AuditRetentionLoop } from "../actors/loops/AuditRetentionLoop"
import { HealthLoop } from "../actors/loops/HealthLoop"
import { SchemaRefreshLoop } from "../actors/loops/SchemaRefreshLoop"
import { SchemaWatchLoop } from "../actors/loops/SchemaWatchLoop"
import { ResultCache } from "../src/governance/ResultCache"
import { McpTools } from "../src/mcp/McpTools"
import { AuditRepo } from "../src/repos/AuditRepo"
import { ApiKeys } from "../src/services/ApiKeys"
import { Budgets } from "../src/services/Budgets"
import { Audit } from "../src/services/Audit"
import { Authenticator } from "../src/services/Authenticator"
import { ConnectionChecks } from "../src/services/ConnectionChecks"
import { ConnectionHealth } from "../src/services/ConnectionHealth"
import { ConnectionTransfer } from "../src/services/ConnectionTransfer"
import { Connections } from "../src/services/Connections"
import { LocalAccess } from "../src/services/LocalAccess"
import { Metrics } from "../src/services/Metrics"
import { PiiDetector } from "../src/services/PiiDetector"
import { Posture } from "../src/services/Posture"
import { Queries } from "../src/services/Queries"
import { SchemaChanges } from "../src/services/SchemaChanges"
import { SchemaContext } from "../src/services/SchemaContext"
import { SchemaCuration } from "../src/services/SchemaCuration"
import { SchemaWatches } from "../src/services/SchemaWatches"
import { SchemaExplorer } from "../src/services/SchemaExplorer"
import { SchemaRelations } from "../src/services/SchemaRelations"
import { Schemas } from "../src/services/Schemas"
import { Settings } from "../src/services/Settings"
import { AppConfig } from "./AppConfig"
import { ConnectorPools } from "./connectors/ConnectorPools"
import { CredentialCipher } from "./CredentialCipher"
import { EnvConnections } from "./EnvConnections"
import { HttpServerLive } from "./HttpServer"
import { Leases } from "./Leases"
import { RateLimits } from "./RateLimits"
import { StoreLive } from "./Store"

const Foundation = StoreLive.pipe(Layer.provideMerge(AppConfig.Default))

const ConnectionsLive = Layer.mergeAll(ConnectionHealth.Default, ConnectionTransfer.Default, PiiDetector.Default, SchemaExplorer.Default, SchemaContext.Default, SchemaCuration.Default, SchemaWatches.Default, SchemaChanges.Default, SchemaRelations.Default).pipe(
  Layer.provideMerge(Queries.Default),
  Layer.provideMerge(Schemas.Default),
  Layer.provideMerge(ConnectionChecks.Default),
  Layer.provideMerge(Connections.Default),
  Layer.provideMerge(Layer.mergeAll(CredentialCipher.Default, ConnectorPools.Default, Settings.Default, ResultCache.Default, Budgets.Default))
)

// The MCP tool table is built on the services it calls.
const ServicesLive = McpTools.Default.pipe(
  Layer.provideMerge(
    Layer.mergeAll(
      ConnectionsLive,
      ApiKeys.Default,
      Authenticator.Default,
      Audit.Default,
      AuditRepo.Default,
      LocalAccess.Default,
      Metrics.Default,
      Posture.Default,
      RateLimits.Default,
      Leases.Default
    )
  ),
  Layer.provideMerge(Foundation)
)

/** The single composition root: the HTTP server and every background loop, on one store. */
export const AppLive = Layer.mergeAll(HttpServerLive, AuditRetentionLoop, HealthLoop, SchemaRefreshLoop, SchemaWatchLoop).pipe(
  // Env connections are in place before the first request is served.
  Layer.provide(EnvConnections),
  Layer.provide(ServicesLive)
)
