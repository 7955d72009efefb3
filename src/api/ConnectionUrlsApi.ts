import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ConnectionInput, DbType } from "../domain/Connection"
import { InvalidRequest } from "../domain/Errors"
import { docs, RequiredScope } from "./Annotations"
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

export class ConnectionUrlsApi extends HttpApiGroup.make("connectionUrls")
  .add(
    HttpApiEndpoint.post("parse", "/connections/parse-url")
      .setPayload(UrlBody)
      .addSuccess(ParsedUrl)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Parse a connection URL",
          "Reads a connection URL into its database type and connection fields. Secrets in the URL (a password, say) are named in `secrets_present`, never echoed; a URL it cannot read is a 400."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("validate", "/connections/validate-url")
      .setPayload(UrlBody)
      .addSuccess(UrlValidation)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Validate a connection URL", "Checks a connection URL without connecting and lists what is wrong with it; an invalid URL is a 200 with `valid: false`."))
  )
  .add(
    HttpApiEndpoint.post("build", "/connections/build-url")
      .setPayload(ConnectionInput)
      .addSuccess(BuiltUrl)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Build a connection URL", "Writes the connection URL for a set of connection fields; secrets are left out of it and named in `secrets_omitted`."))
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Connection URLs for every supported database type: read one into fields, check one, or write one from fields.") {}
