import { Schema } from "effect"
import { KeyId, OrgId } from "./Ids"
import { ALL_SCOPES, Role, Scope } from "./Scope"

export const KEY_PATTERN = /^sp_[0-9a-f]{32}$/
export const KEY_PREFIX_LENGTH = 11

export class ApiKey extends Schema.Class<ApiKey>("ApiKey")({
  id: KeyId,
  name: Schema.String,
  scopes: Schema.Array(Scope),
  prefix: Schema.String,
  organization: OrgId,
  created_at: Schema.Date,
  last_used_at: Schema.NullOr(Schema.Date),
  expires_at: Schema.NullOr(Schema.Date)
}) {}

export class CreatedApiKey extends ApiKey.extend<CreatedApiKey>("CreatedApiKey")({
  /** The raw key: shown once, never stored. */
  key: Schema.String
}) {}

export const CreateApiKey = Schema.Struct({
  name: Schema.Trim.pipe(
    Schema.minLength(1, { message: () => "name is required" }),
    Schema.maxLength(64, { message: () => "name must be at most 64 characters" })
  ),
  scopes: Schema.Array(Scope).pipe(
    Schema.minItems(1, { message: () => `scopes must list at least one of: ${ALL_SCOPES.join(", ")}` })
  ),
  expires_at: Schema.optionalWith(
    Schema.Date.annotations({ message: () => ({ message: "expires_at must be an ISO-8601 date-time", override: true }) }),
    { exact: true }
  )
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type CreateApiKey = typeof CreateApiKey.Type

/** The calling credential as it may see itself (never the key): what the web app shows and filters its history by. */
export const Caller = Schema.Struct({
  kind: Schema.Literal("api_key", "jwt", "local"),
  user_id: Schema.String,
  key_id: Schema.NullOr(Schema.String),
  key_prefix: Schema.NullOr(Schema.String),
  scopes: Schema.Array(Scope),
  role: Role
})
