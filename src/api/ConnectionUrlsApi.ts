import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionInput, DbType } from "../domain/Connection"
import { InvalidRequest } from "../domain/Errors"
import { RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const UrlBody = Schema.Struct({ url: Schema.String.pipe(Schema.maxLength(8192, { message: () => "must be at most 8192 characters" })) })

export const ParsedUrl = Schema.Struct({
  db_type: DbType,
  /** The connection fields the URL gives, without its secrets. */
  fields: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  /** Secrets the URL carried (e.g. password): named, never echoed. */
  secrets_present: Schema.Array(Schema.String),
  url_form: Schema.String
})

export const UrlValidation = Schema.Struct({
  valid: Schema.Boolean,
  db_type: Schema.NullOr(DbType),
  errors: Schema.Array(Schema.String)
})

export const BuiltUrl = Schema.Struct({ url: Schema.String, secrets_omitted: Schema.Array(Schema.String) })

/** Connection URLs of all eleven types: read one into fields, check one, write one from fields. */
export class ConnectionUrlsApi extends HttpApiGroup.make("connectionUrls")
  .add(
    HttpApiEndpoint.post("parse", "/connections/parse-url")
      .setPayload(UrlBody)
      .addSuccess(ParsedUrl)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.post("validate", "/connections/validate-url")
      .setPayload(UrlBody)
      .addSuccess(UrlValidation)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.post("build", "/connections/build-url")
      .setPayload(ConnectionInput)
      .addSuccess(BuiltUrl)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
  )
  .middleware(Authentication)
  .prefix("/api") {}
