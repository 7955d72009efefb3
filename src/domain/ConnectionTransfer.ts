import { Schema } from "effect"
import { ConnectionInput, ConnectionName } from "./Connection"
import { PiiRule } from "./Pii"

/** Each connection's PII rules by name: they travel with the connections, or masking would not. */
const PiiRulesByName = Schema.Record({ key: ConnectionName, value: Schema.Array(PiiRule).pipe(Schema.maxItems(2000)) })

export const EXPORT_FORMAT = "sluice.connections.v1"

export const ExportRequest = Schema.Struct({
  /** Which connections; all of the org's when left out. */
  names: Schema.optional(Schema.Array(ConnectionName).pipe(Schema.maxItems(1000, { message: () => "at most 1000 names" }))),
  /** Secrets in plain text: needs the admin scope and confirm: true, and is marked in the audit log. */
  include_secrets: Schema.optional(Schema.Boolean),
  confirm: Schema.optional(Schema.Boolean)
}).annotations({ parseOptions: { onExcessProperty: "error" } })

export const ConnectionExport = Schema.Struct({
  format: Schema.Literal(EXPORT_FORMAT),
  exported_at: Schema.Date,
  include_secrets: Schema.Boolean,
  connections: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  pii_rules: PiiRulesByName
})

export const ImportRequest = Schema.Struct({
  format: Schema.optional(Schema.Literal(EXPORT_FORMAT)),
  connections: Schema.Array(ConnectionInput).pipe(Schema.maxItems(500, { message: () => "at most 500 connections per import" })),
  /** A name that already exists: fail the whole import (default), keep the existing one, or replace it. */
  on_conflict: Schema.optional(Schema.Literal("fail", "skip", "replace")),
  pii_rules: Schema.optional(PiiRulesByName)
}).annotations({ parseOptions: { onExcessProperty: "ignore" } })

export const ImportResult = Schema.Struct({
  created: Schema.Array(Schema.String),
  replaced: Schema.Array(Schema.String),
  skipped: Schema.Array(Schema.String)
})
