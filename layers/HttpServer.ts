import { createServer } from "node:http"
import { HttpApiBuilder, type HttpApp, HttpApiSwagger, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { SluiceApi } from "../src/api/Api"
import { AuditHttp } from "../src/http/AuditHttp"
import { BudgetsHttp } from "../src/http/BudgetsHttp"
import { AuthenticationLive } from "../src/http/AuthenticationLive"
import { ConnectionHealthHttp } from "../src/http/ConnectionHealthHttp"
import { ConnectionsHttp } from "../src/http/ConnectionsHttp"
import { ConnectionTransferHttp } from "../src/http/ConnectionTransferHttp"
import { ConnectionUrlsHttp } from "../src/http/ConnectionUrlsHttp"
import { KeysHttp } from "../src/http/KeysHttp"
import { McpHttp } from "../src/http/McpHttp"
import { PiiHttp } from "../src/http/PiiHttp"
import { SchemaCurationHttp } from "../src/http/SchemaCurationHttp"
import { SchemaHttp } from "../src/http/SchemaHttp"
import { SchemaWatchesHttp } from "../src/http/SchemaWatchesHttp"
import { PublicHttp } from "../src/http/PublicHttp"
import { QueryHttp } from "../src/http/QueryHttp"
import { makeRequestPipeline } from "../src/http/RequestPipeline"
import { SystemHttp } from "../src/http/SystemHttp"
import { McpRouteLive } from "../src/mcp/McpRoute"
import { AppConfig } from "./AppConfig"
import { webServer } from "./WebServer"

const ApiLive = HttpApiBuilder.api(SluiceApi).pipe(
  Layer.provide([
    KeysHttp,
    AuditHttp,
    ConnectionsHttp,
    ConnectionHealthHttp,
    ConnectionUrlsHttp,
    ConnectionTransferHttp,
    QueryHttp,
    BudgetsHttp,
    PiiHttp,
    SchemaHttp,
    SchemaCurationHttp,
    SchemaWatchesHttp,
    SystemHttp,
    PublicHttp,
    McpHttp,
    McpRouteLive
  ]),
  Layer.provide(AuthenticationLive)
)

const NodeServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => NodeHttpServer.layer(() => createServer(), { port: config.port, host: config.host }))
)

/**
 * REST under /api, MCP at /mcp, /health, /local-api-key, the OpenAPI document and its docs page, on
 * SP_PORT; the same app, behind the same pipeline, serves the web app's API calls on SP_WEB_PORT.
 */
export const HttpServerLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const pipeline = yield* makeRequestPipeline
    // As HttpApiBuilder.serve does: the platform services the app needs come with each Node server layer.
    const app = (yield* HttpApiBuilder.httpApp) as HttpApp.Default
    return Layer.merge(HttpServer.serve(app, pipeline).pipe(HttpServer.withLogAddress, Layer.provide(NodeServerLive)), webServer(app, pipeline))
  })
).pipe(
  Layer.provide(HttpApiSwagger.layer({ path: "/docs" })),
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/api/openapi.json" })),
  Layer.provide(ApiLive),
  Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer])
)
