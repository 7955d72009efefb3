import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AuditEntry, AuditFilterParams, AuditStats } from "../domain/Audit"
import { InvalidRequest } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { docs, RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

export class AuditApi extends HttpApiGroup.make("audit")
  .add(
    HttpApiEndpoint.get("list", "/audit")
      .setUrlParams(Schema.extend(AuditFilterParams, PageParams))
      .addSuccess(Page(AuditEntry))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "List audit entries",
          "The organization's audit log, newest first, filtered by time range, event type, connection, key or outcome. Paginated: pass `next_cursor` back as `cursor` for the next page (`limit` 1–500, default 100)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("stats", "/audit/stats")
      .setUrlParams(Schema.Struct({ hours: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 24 * 90))) }))
      .addSuccess(AuditStats)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Summarize audit activity",
          "Request counts by outcome over the last `hours` (default 24, at most 90 days), in total and per hour, with the ten busiest keys and the most common reasons requests were refused."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("export", "/audit/export")
      .setUrlParams(Schema.extend(AuditFilterParams, Schema.Struct({ format: Schema.optional(Schema.Literal("json", "csv")) })))
      .addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/csv" })))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "admin")
      .annotate(RateClass, "expensive")
      .annotateContext(
        docs(
          "Export audit entries",
          "Streams the filtered audit log as a download: a JSON array of entries (`format=json`, the default) or CSV (`format=csv`), capped at the gateway's export row limit. Needs the `admin` scope."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "The audit log: every request through the gateway, who made it, what it touched and how it ended.") {}
