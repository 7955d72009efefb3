import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { AuditEntry, AuditFilterParams, AuditStats } from "../domain/Audit"
import { InvalidRequest } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

export class AuditApi extends HttpApiGroup.make("audit")
  .add(
    HttpApiEndpoint.get("list", "/audit")
      .setUrlParams(Schema.extend(AuditFilterParams, PageParams))
      .addSuccess(Page(AuditEntry))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.get("stats", "/audit/stats")
      .setUrlParams(Schema.Struct({ hours: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 24 * 90))) }))
      .addSuccess(AuditStats)
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.get("export", "/audit/export")
      .setUrlParams(Schema.extend(AuditFilterParams, Schema.Struct({ format: Schema.optional(Schema.Literal("json", "csv")) })))
      .addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/csv" })))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "admin")
      .annotate(RateClass, "expensive")
  )
  .middleware(Authentication)
  .prefix("/api") {}
