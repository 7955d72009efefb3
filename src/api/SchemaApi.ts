import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { BudgetExhausted } from "../domain/Budget"
import { ConnectionName } from "../domain/Connection"
import { GovernedQueryErrors } from "../domain/Query"
import { RefreshStatus, SchemaSnapshot } from "../domain/SchemaSnapshot"
import { PageParams } from "../domain/Pagination"
import {
  AgentContext,
  AgentContextParams,
  ColumnExploration,
  ColumnsExploration,
  ConnectionsDiff,
  ExploreColumnsRequest,
  ExploreRequest,
  GroupedSchema,
  JoinPathParams,
  JoinPaths,
  LiveDiff,
  RelationshipParams,
  Relationships,
  SampleParams,
  SampleValues,
  SchemaCacheInvalidate,
  SchemaCacheStats,
  SchemaChanges,
  SchemaFilterParams,
  SchemaFilterResult,
  SchemaLinkParams,
  SchemaLinkResult,
  SchemaOverview,
  SchemaSearchParams,
  SchemaSearchResult,
  SchemaText,
  SchemaTextParams,
  TableSample,
  WarmupResult
} from "../domain/SchemaViews"
import { RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ByName = Schema.Struct({ name: ConnectionName })

const get = <N extends string, P extends string>(name: N, path: P, scope: "read" | "query") =>
  HttpApiEndpoint.get(name, `/connections/:name/schema${path}`).setPath(ByName).addError(GovernedQueryErrors).annotate(RequiredScope, scope)
const read = <N extends string, P extends string>(name: N, path: P) => get(name, path, "read")
// Row values (samples, value counts, min and max) are data, not metadata: they need the query scope as SQL does.
const rows = <N extends string, P extends string>(name: N, path: P) => get(name, path, "query")

/**
 * A connection's schema from its latest scan, in the forms tools and agents want: full JSON,
 * grouped, compact lines, DDL, an overview, ranked search and structured filters. Tables the
 * connection blocks are left out of all of them.
 */
export class SchemaApi extends HttpApiGroup.make("schema")
  .add(read("get", "").addSuccess(SchemaSnapshot))
  .add(read("grouped", "/grouped").addSuccess(GroupedSchema))
  .add(read("compact", "/compact").setUrlParams(SchemaTextParams).addSuccess(SchemaText))
  .add(read("ddl", "/ddl").setUrlParams(SchemaTextParams).addSuccess(SchemaText))
  .add(read("overview", "/overview").addSuccess(SchemaOverview))
  .add(read("search", "/search").setUrlParams(SchemaSearchParams).addSuccess(SchemaSearchResult))
  .add(read("filter", "/filter").setUrlParams(SchemaFilterParams).addSuccess(SchemaFilterResult))
  .add(read("link", "/link").setUrlParams(SchemaLinkParams).addSuccess(SchemaLinkResult))
  .add(read("agentContext", "/agent-context").setUrlParams(AgentContextParams).addSuccess(AgentContext))
  .add(read("relationships", "/relationships").setUrlParams(RelationshipParams).addSuccess(Relationships))
  .add(read("joinPaths", "/join-paths").setUrlParams(JoinPathParams).addSuccess(JoinPaths))
  .add(rows("samples", "/samples").setUrlParams(SampleParams).addSuccess(TableSample).addError(BudgetExhausted).annotate(RateClass, "expensive"))
  .add(rows("sampleValues", "/sample-values").setUrlParams(SampleParams).addSuccess(SampleValues).addError(BudgetExhausted).annotate(RateClass, "expensive"))
  .add(
    HttpApiEndpoint.post("explore", "/connections/:name/schema/explore")
      .setPath(ByName)
      .setPayload(ExploreRequest)
      .addSuccess(ColumnExploration)
      .addError(GovernedQueryErrors)
      .addError(BudgetExhausted)
      .annotate(RequiredScope, "query")
      .annotate(RateClass, "expensive")
  )
  .add(
    HttpApiEndpoint.post("exploreColumns", "/connections/:name/schema/explore-columns")
      .setPath(ByName)
      .setPayload(ExploreColumnsRequest)
      .addSuccess(ColumnsExploration)
      .addError(GovernedQueryErrors)
      .addError(BudgetExhausted)
      .annotate(RequiredScope, "query")
      .annotate(RateClass, "expensive")
  )
  .add(read("refreshStatus", "/refresh-status").addSuccess(RefreshStatus))
  .add(read("diff", "/diff").addSuccess(LiveDiff).annotate(RateClass, "expensive"))
  .add(
    HttpApiEndpoint.get("compare", "/connections/:name/schema/diff/:compare")
      .setPath(Schema.Struct({ name: ConnectionName, compare: ConnectionName }))
      .addSuccess(ConnectionsDiff)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "read")
  )
  .add(read("diffHistory", "/diff-history").setUrlParams(PageParams).addSuccess(SchemaChanges))
  .add(
    HttpApiEndpoint.get("changes", "/schema/changes").setUrlParams(PageParams).addSuccess(SchemaChanges).addError(GovernedQueryErrors).annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.post("refresh", "/connections/:name/schema/refresh")
      .setPath(ByName)
      .addSuccess(RefreshStatus, { status: 202 })
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
  )
  .add(
    HttpApiEndpoint.post("warmup", "/connections/schema/warmup")
      .addSuccess(WarmupResult, { status: 202 })
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
      .annotate(RateClass, "expensive")
  )
  .add(HttpApiEndpoint.get("cacheStats", "/schema-cache/stats").addSuccess(SchemaCacheStats).annotate(RequiredScope, "read"))
  .add(
    HttpApiEndpoint.post("cacheInvalidate", "/schema-cache/invalidate")
      .setPayload(SchemaCacheInvalidate)
      .addSuccess(Schema.Struct({ invalidated: Schema.Int }))
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "write")
  )
  .middleware(Authentication)
  .prefix("/api") {}
