import { Schema } from "effect"

const bounded = (min: number, max: number, name: string) =>
  Schema.Int.pipe(Schema.between(min, max, { message: () => `${name} must be an integer between ${min} and ${max}` }))

const exact = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** Per-org defaults an admin may change; absent fields fall back to the gateway's configuration. */
export const SettingsFields = {
  default_row_limit: exact(bounded(1, 100_000, "default_row_limit")),
  mcp_default_row_limit: exact(bounded(1, 10_000, "mcp_default_row_limit")),
  query_timeout_seconds: exact(bounded(1, 300, "query_timeout_seconds")),
  mcp_tools: exact(Schema.Literal("full", "core"))
}

export const SettingsPatch = Schema.Struct(SettingsFields).annotations({ parseOptions: { onExcessProperty: "error" } })
export type SettingsPatch = typeof SettingsPatch.Type

export const OrgSettings = Schema.Struct({
  default_row_limit: Schema.Int,
  mcp_default_row_limit: Schema.Int,
  query_timeout_seconds: Schema.Int,
  mcp_tools: Schema.Literal("full", "core")
})
export type OrgSettings = typeof OrgSettings.Type

export const Plan = Schema.Struct({
  plan: Schema.String,
  deployment_mode: Schema.Literal("self-hosted", "cloud"),
  audit_retention_days: Schema.NullOr(Schema.Int),
  limits: Schema.Struct({
    per_key_rpm: Schema.Int,
    per_org_rpm: Schema.Int,
    max_export_rows: Schema.Int,
    request_body_bytes: Schema.Int,
    metrics_streams: Schema.Int
  })
})

export const SecurityStatus = Schema.Struct({
  deployment_mode: Schema.Literal("self-hosted", "cloud"),
  store: Schema.Literal("embedded", "postgresql"),
  tenant_isolation: Schema.Literal("row_level_security"),
  local_access: Schema.Boolean,
  jwt_sessions: Schema.Boolean,
  trusted_proxies: Schema.Int,
  allowed_hosts: Schema.Array(Schema.String),
  rate_limit_store: Schema.Literal("memory", "redis"),
  keys: Schema.Struct({ total: Schema.Int, admin: Schema.Int, expiring_7d: Schema.Int, never_used: Schema.Int })
})
