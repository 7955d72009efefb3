import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { BudgetExhausted } from "../domain/Budget"
import { Conflict, InvalidRequest, NotFound } from "../domain/Errors"
import {
  CacheInvalidation,
  CacheStats,
  ExplainRequest,
  ExplainResponse,
  GovernedQueryErrors,
  QueryRequest,
  QueryResponse
} from "../domain/Query"
import { RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

/** Governed, read-only SQL: the REST door to the one executor every data path goes through. */
export class QueryApi extends HttpApiGroup.make("query")
  .add(
    HttpApiEndpoint.post("run", "/query")
      .setPayload(QueryRequest)
      .addSuccess(QueryResponse)
      .addError(GovernedQueryErrors)
      .addError(BudgetExhausted)
      .annotate(RequiredScope, "query")
      .annotate(RateClass, "expensive")
  )
  .add(
    HttpApiEndpoint.post("explain", "/query/explain")
      .setPayload(ExplainRequest)
      .addSuccess(ExplainResponse)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "query")
      .annotate(RateClass, "expensive")
  )
  .add(HttpApiEndpoint.get("cacheStats", "/cache/stats").addSuccess(CacheStats).annotate(RequiredScope, "read"))
  .add(
    HttpApiEndpoint.post("invalidateCache", "/cache/invalidate")
      .setPayload(CacheInvalidation)
      .addSuccess(Schema.Struct({ invalidated: Schema.Int }))
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
  )
  .middleware(Authentication)
  .prefix("/api") {}
