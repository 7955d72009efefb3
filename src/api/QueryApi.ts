import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { BudgetExhausted } from "../domain/Budget"
import { Conflict, InvalidRequest, NotFound, Unavailable } from "../domain/Errors"
import { Schema } from "effect"
import { CacheInvalidation, CacheStats, DatabaseUnavailable, ExplainRequest, ExplainResponse, QueryBlocked, QueryFailed, QueryRequest, QueryResponse, QueryTimeout, ResultTooLarge } from "../domain/Query"
import { RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

/** Governed, read-only SQL: the REST door to the one executor every data path goes through. */
export class QueryApi extends HttpApiGroup.make("query")
  .add(
  HttpApiEndpoint.post("run", "/query")
    .setPayload(QueryRequest)
    .addSuccess(QueryResponse)
    .addError(InvalidRequest)
    .addError(NotFound)
    .addError(Conflict)
    .addError(Unavailable)
    .addError(QueryBlocked)
    .addError(QueryFailed)
    .addError(QueryTimeout)
    .addError(DatabaseUnavailable)
    .addError(ResultTooLarge)
    .addError(BudgetExhausted)
    .annotate(RequiredScope, "query")
    .annotate(RateClass, "expensive")
)
  .add(
    HttpApiEndpoint.post("explain", "/query/explain")
      .setPayload(ExplainRequest)
      .addSuccess(ExplainResponse)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Unavailable)
      .addError(QueryBlocked)
      .addError(QueryFailed)
      .addError(QueryTimeout)
      .addError(DatabaseUnavailable)
      .addError(ResultTooLarge)
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
