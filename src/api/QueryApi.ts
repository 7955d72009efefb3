import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema, Struct } from "effect"
import { BudgetExhausted } from "../domain/Budget"
import { Conflict, InvalidRequest, NotFound } from "../domain/Errors"
import {
  CacheInvalidation,
  CacheStats,
  ExplainRequest,
  ExplainResponse,
  GovernedQueryErrors,
  NDJSON,
  QueryRequest,
  QueryResponse,
  STREAMED_ROW_LIMIT
} from "../domain/Query"
import { docs, RateClass, RequiredScope, withAlternateContent } from "./Annotations"
import { Authentication } from "./Authentication"

/**
 * One line of a streamed result, for the OpenAPI document (the handler writes `QueryStreamPart`s; a test checks they agree):
 * the head, then a JSON array per row, then `end`, or `error` when the statement fails after its first row.
 */
export const QueryStreamLine = Schema.Union(
  Schema.Struct({
    type: Schema.Literal("head"),
    ...Struct.pick(QueryResponse.fields, "query_id", "columns", "cached", "pii_masked", "tables")
  }).annotations({ title: "head", description: "The first line: the result's columns and how it was governed." }),
  // Its values as the document's one `AnyValue` (see SchemaViews): a JSON Schema `$id` may appear once.
  Schema.Array(Schema.Unknown.annotations({ identifier: "AnyValue" })).annotations({ title: "row", description: "One row: its values in column order." }),
  Schema.Struct({
    type: Schema.Literal("end"),
    ...Struct.pick(QueryResponse.fields, "row_count", "completeness", "truncated_at", "execution_ms", "bytes_scanned", "budget")
  }).annotations({ title: "end", description: "The last line of a complete stream." }),
  Schema.Struct({ type: Schema.Literal("error"), code: Schema.String, message: Schema.String }).annotations({
    title: "error",
    description: "The last line when the statement fails after the stream began."
  })
).annotations({ identifier: "QueryStreamLine", description: `One line of a result streamed as ${NDJSON}.` })

const withNdjsonResult = withAlternateContent(
  NDJSON,
  { $ref: "#/components/schemas/QueryStreamLine" },
  `The result: one JSON document, or with \`Accept: ${NDJSON}\` one JSON value per line as rows are read.`
)

export class QueryApi extends HttpApiGroup.make("query")
  .add(
    HttpApiEndpoint.post("run", "/query")
      .setPayload(QueryRequest)
      .addSuccess(QueryResponse)
      .addError(GovernedQueryErrors)
      .addError(BudgetExhausted)
      .annotate(RequiredScope, "query")
      .annotate(RateClass, "expensive")
      .annotate(OpenApi.Transform, withNdjsonResult)
      .annotateContext(
        docs(
          "Run a read-only query",
          `Checks the SQL (read-only, table policy), applies row limits, PII masking and budgets, runs it on the named connection and records it in the audit log. With \`Accept: ${NDJSON}\` the rows are streamed as they are read (up to ${STREAMED_ROW_LIMIT} rows) instead of returned in one document; a refused statement is a 400 with the reason, an exhausted budget a 429.`
        )
      )
  )
  .add(
    HttpApiEndpoint.post("explain", "/query/explain")
      .setPayload(ExplainRequest)
      .addSuccess(ExplainResponse)
      .addError(GovernedQueryErrors)
      .annotate(RequiredScope, "query")
      .annotate(RateClass, "expensive")
      .annotateContext(
        docs(
          "Explain a query",
          "Checks the SQL as `POST /api/query` would and returns the database's plan for it, with estimated rows, cost and bytes where the engine gives them, without running it."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("cacheStats", "/cache/stats")
      .addSuccess(CacheStats)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get result cache statistics", "The organization's cached query results: entries, bytes, hits, misses, evictions and hit rate."))
  )
  .add(
    HttpApiEndpoint.post("invalidateCache", "/cache/invalidate")
      .setPayload(CacheInvalidation)
      .addSuccess(Schema.Struct({ invalidated: Schema.Int }))
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Clear cached query results",
          "Drops the organization's cached results, or only one connection's when `connection_name` is given, and says how many were dropped. 404 for an unknown connection."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Governed, read-only SQL: the REST door to the one executor every data path goes through, and its result cache.") {}
