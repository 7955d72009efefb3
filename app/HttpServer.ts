import { HttpApiBuilder, type HttpApp, HttpApiSwagger } from "@effect/platform"
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
import { AgentRunsHttp } from "../src/http/AgentRunsHttp"
import { ChatHttp } from "../src/http/ChatHttp"
import { KnowledgeHttp } from "../src/http/KnowledgeHttp"
import { ReportsHttp } from "../src/http/ReportsHttp"
import { WorkspaceProjectsHttp } from "../src/http/WorkspaceProjectsHttp"
import { DbBranchesHttp } from "../src/http/DbBranchesHttp"
import { DbtProxyHttp } from "../src/http/DbtProxyHttp"
import { DbtProjectsHttp } from "../src/http/DbtProjectsHttp"
import { EvalsHttp } from "../src/http/EvalsHttp"
import { GitRouteLive } from "../src/http/GitRoute"
import { EvalUploadPartRouteLive } from "../src/http/EvalUploadPartRoute"
import { NotebookSessionsHttp } from "../src/http/NotebookSessionsHttp"
import { SandboxesHttp } from "../src/http/SandboxesHttp"
import { SecretsHttp } from "../src/http/SecretsHttp"
import { PublicHttp } from "../src/http/PublicHttp"
import { QueryHttp } from "../src/http/QueryHttp"
import { makeFastLane } from "../src/gate/FastLane"
import { makeFastQuery } from "../src/gate/FastQuery"
import { makeFastMcp } from "../src/mcp/FastMcp"
import { makeRequestPipeline, type RequestPipeline } from "../src/gate/RequestPipeline"
import { SystemHttp } from "../src/http/SystemHttp"
import { McpRouteLive } from "../src/mcp/McpRoute"
import { AppConfig } from "../layers/AppConfig"
import { drainingServer } from "../layers/DrainingServer"
import { shutdownPlan } from "../layers/ShutdownDeadline"
import { notebookServer } from "./NotebookServer"
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
    AgentRunsHttp,
    ChatHttp,
    KnowledgeHttp,
    ReportsHttp,
    WorkspaceProjectsHttp,
    DbBranchesHttp,
    DbtProxyHttp,
    DbtProjectsHttp,
    GitRouteLive,
    EvalUploadPartRouteLive,
    SandboxesHttp,
    NotebookSessionsHttp,
    EvalsHttp,
    SecretsHttp,
    SystemHttp,
    PublicHttp,
    McpHttp,
    McpRouteLive
  ]),
  Layer.provide(AuthenticationLive)
)

/** REST under /api, MCP at /mcp, /health, /local-api-key, the OpenAPI document and its docs page, behind the request pipeline, for `serve` to serve. */
export const servingApp = <E, R>(serve: (app: HttpApp.Default, pipeline: RequestPipeline) => Layer.Layer<never, E, R>) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const pipeline = yield* makeRequestPipeline
      // As HttpApiBuilder.serve does: the platform services the app needs come with each server layer.
      const app = (yield* HttpApiBuilder.httpApp) as HttpApp.Default
      return serve(app, pipeline)
    })
  ).pipe(
    Layer.provide(HttpApiSwagger.layer({ path: "/docs" })),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/api/openapi.json" })),
    Layer.provide(ApiLive),
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer])
  )

/** The app on SP_PORT; the same app, behind the same pipeline, serves the web app's API calls on SP_WEB_PORT; notebooks have an origin of their own. */
export const HttpServerLive = servingApp((app, pipeline) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const routes = config.fastLane ? [yield* makeFastQuery(pipeline), yield* makeFastMcp(pipeline)].filter((route) => route !== undefined) : []
      return Layer.mergeAll(
        drainingServer(app, pipeline.wrap, {
          port: config.port,
          host: config.host,
          shutdown: shutdownPlan(config.shutdownTimeoutSeconds),
          setting: "SP_PORT",
          ...(config.fastLane ? { front: makeFastLane(config, routes) } : {})
        }).pipe(
          Layer.tap(() => Effect.logInfo(`Listening on http://${config.host}:${config.port}`))
        ),
        webServer(app, pipeline.wrap),
        notebookServer(pipeline)
      )
    })
  )
)
