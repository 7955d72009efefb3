import { Schema } from "effect"

export const DB_TYPES = [
  "postgresql",
  "mysql",
  "snowflake",
  "bigquery",
  "redshift",
  "clickhouse",
  "databricks",
  "mssql",
  "trino",
  "duckdb",
  "sqlite"
] as const
export const DbType = Schema.Literal(...DB_TYPES)
export type DbType = typeof DbType.Type

export const CONNECTION_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/
/** Names that are routes under /api/connections, so a connection cannot take them. */
const RESERVED_NAMES = new Set(["health", "stats", "test-credentials", "export", "import", "parse-url", "validate-url", "build-url"])
export const ConnectionName = Schema.String.pipe(
  Schema.pattern(CONNECTION_NAME_PATTERN, {
    message: () => "must be 1 to 64 letters, digits, '_' or '-'"
  }),
  Schema.filter((name) => !RESERVED_NAMES.has(name.toLowerCase()) || `"${name}" is reserved for a route under /api/connections`)
)

/** Fields whose values are write-only: encrypted at rest, never returned, logged or echoed. */
export const SECRET_FIELDS = ["password", "access_token", "credentials_json"] as const
export type SecretField = (typeof SECRET_FIELDS)[number]
export const TUNNEL_SECRET_FIELDS = ["private_key", "passphrase", "password"] as const
export const TLS_SECRET_FIELDS = ["client_key_pem"] as const

const text = (max: number) => Schema.String.pipe(Schema.maxLength(max, { message: () => `must be at most ${max} characters` }))
const required = (max: number) =>
  Schema.String.pipe(
    Schema.minLength(1, { message: () => "is required" }),
    Schema.maxLength(max, { message: () => `must be at most ${max} characters` })
  )
const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })
const secret = (max: number) => optional(required(max))
const Port = Schema.Int.pipe(Schema.between(1, 65535, { message: () => "must be an integer between 1 and 65535" }))
const seconds = (max: number) =>
  Schema.Int.pipe(Schema.between(1, max, { message: () => `must be an integer between 1 and ${max} seconds` }))
const HttpsUrl = required(1024).pipe(
  Schema.filter((s) => /^https:\/\/[^\s/]+(\/\S*)?$/.test(s), { message: () => "must be an https:// URL" })
)
const Globs = Schema.Array(required(256)).pipe(Schema.maxItems(200, { message: () => "at most 200 patterns" }))

export const TLS_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const
export const Tls = Schema.Struct({
  mode: Schema.Literal(...TLS_MODES),
  ca_pem: optional(required(65_536)),
  client_cert_pem: optional(required(65_536)),
  client_key_pem: secret(65_536)
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type Tls = typeof Tls.Type

export const SshTunnel = Schema.Struct({
  host: required(255),
  port: optional(Port),
  username: required(128),
  private_key: secret(65_536),
  passphrase: secret(1024),
  password: secret(1024),
  /** Pins the server's host key up front; without it the first key seen is pinned. */
  host_key_fingerprint: optional(
    Schema.String.pipe(Schema.pattern(/^SHA256:[A-Za-z0-9+/]{43}$/, { message: () => "must be an OpenSSH SHA256 fingerprint (SHA256:…)" }))
  )
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type SshTunnel = typeof SshTunnel.Type

/** Fields every db_type accepts. */
const common = {
  name: ConnectionName,
  description: optional(text(2000)),
  tags: optional(Schema.Array(required(64)).pipe(Schema.maxItems(50, { message: () => "at most 50 tags" }))),
  query_timeout: optional(seconds(3600)),
  connection_timeout: optional(seconds(300)),
  max_rows: optional(Schema.Int.pipe(Schema.between(1, 1_000_000, { message: () => "must be between 1 and 1000000" }))),
  schema_include: optional(Globs),
  schema_exclude: optional(Globs),
  /** Seconds between background schema scans of this connection once it has been scanned; default a day. */
  schema_refresh_interval: optional(Schema.Int.pipe(Schema.between(60, 86_400, { message: () => "must be an integer between 60 and 86400 seconds" }))),
  /** Tables no query may read: `table`, `schema.table` or `catalog.schema.table`, `*` matching any run of characters. */
  blocked_tables: optional(Globs),
  /** When set, queries may read only these tables (same forms). */
  allowed_tables: optional(Globs),
  /** The customer's own pure functions (or built-ins the reviewed list lacks) that queries may call: `fn` or `schema.fn`. */
  allowed_functions: optional(
    Schema.Array(
      Schema.String.pipe(
        Schema.pattern(/^[A-Za-z_][A-Za-z0-9_$]{0,127}(\.[A-Za-z_][A-Za-z0-9_$]{0,127}){0,2}$/, {
          message: () => "must be a function name, optionally schema-qualified (fn, schema.fn)"
        })
      )
    ).pipe(Schema.maxItems(200, { message: () => "at most 200 functions" }))
  ),
  /** Seconds a query's result is served again from the gateway's memory; 0 or absent: never. */
  result_cache_ttl: optional(Schema.Int.pipe(Schema.between(0, 86_400, { message: () => "must be an integer between 0 and 86400 seconds" })))
}

/** A database reached over the network: host and port, optionally through TLS and an SSH tunnel. */
const networked = {
  host: required(255),
  port: optional(Port),
  tls: optional(Tls),
  ssh_tunnel: optional(SshTunnel)
}

const strict = { parseOptions: { onExcessProperty: "error" } } as const

const variant = <T extends DbType, F extends Schema.Struct.Fields>(dbType: T, fields: F) =>
  Schema.Struct({ db_type: Schema.Literal(dbType), ...common, ...fields }).annotations({
    ...strict,
    identifier: `${dbType}Connection`
  })

const credentials = { username: required(128), password: secret(1024) }

/** The one schema unqualified names resolve to: queries run with search_path pinned to it (default public). */
const searchSchema = { schema_name: optional(required(255)) }

export const BRANCHING_SECRET_FIELDS = ["api_key"] as const
/**
 * Where a PostgreSQL connection's database branches are made: absent, as template copies on its own
 * server; `neon`, as branches of a project on a hosted branching service that speaks Neon's API
 * (the service's address is the gateway's SP_NEON_API_URL, never a connection's).
 */
export const Branching = Schema.Struct({
  service: Schema.Literal("neon"),
  project_id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,128}$/, { message: () => "must be the service's project id (letters, digits, _ or -)" })),
  /** The service's branch that holds the connection's database; absent: the project's default branch. */
  parent_branch_id: optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,128}$/, { message: () => "must be the service's branch id (letters, digits, _ or -)" }))),
  api_key: secret(1024)
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type Branching = typeof Branching.Type

export const PostgresqlInput = variant("postgresql", { ...networked, database: required(255), ...searchSchema, ...credentials, branching: optional(Branching) })
export const RedshiftInput = variant("redshift", { ...networked, database: required(255), ...searchSchema, ...credentials })
export const MysqlInput = variant("mysql", { ...networked, database: optional(required(255)), ...credentials })
export const MssqlInput = variant("mssql", { ...networked, database: optional(required(255)), ...credentials })
export const ClickhouseInput = variant("clickhouse", {
  ...networked,
  database: optional(required(255)),
  username: optional(required(128)),
  password: secret(1024),
  protocol: optional(
    Schema.Literal("native", "http").pipe(
      Schema.filter((p) =>
        p === "http" ||
        "native (TCP 9000/9440) is not supported: no maintained Node.js client speaks it; use http, ClickHouse's HTTP interface on 8123 (or 8443 with TLS)"
      )
    )
  )
})
export const TrinoInput = variant("trino", {
  ...networked,
  username: required(128),
  password: secret(1024),
  catalog: optional(required(255)),
  schema_name: optional(required(255))
})
export const SnowflakeInput = variant("snowflake", {
  account: required(255),
  /** Defaults to <account>.snowflakecomputing.com; set for PrivateLink or a regional host. */
  host: optional(required(255)),
  username: required(128),
  password: secret(1024),
  warehouse: optional(required(255)),
  database: optional(required(255)),
  role: optional(required(255)),
  schema_name: optional(required(255))
})
export const BigqueryInput = variant("bigquery", {
  project: required(255),
  dataset: optional(required(1024)),
  credentials_json: secret(65_536),
  /** A regional or Private Service Connect endpoint instead of https://bigquery.googleapis.com. */
  api_endpoint: optional(HttpsUrl),
  location: optional(required(64)),
  /** Per-query cap on bytes billed; the dry run refuses a statement that would scan more. */
  maximum_bytes_billed: optional(Schema.Int.pipe(Schema.positive({ message: () => "must be a positive integer" })))
})
export const DatabricksInput = variant("databricks", {
  host: required(255),
  http_path: required(1024),
  access_token: secret(4096),
  catalog: optional(required(255)),
  schema_name: optional(required(255))
})
export const DuckdbInput = variant("duckdb", { database: required(4096) })
export const SqliteInput = variant("sqlite", { database: required(4096) })

/** The body of POST /api/connections: one Schema per db_type, told apart by `db_type`. */
export const ConnectionInput = Schema.Union(
  PostgresqlInput,
  MysqlInput,
  SnowflakeInput,
  BigqueryInput,
  RedshiftInput,
  ClickhouseInput,
  DatabricksInput,
  MssqlInput,
  TrinoInput,
  DuckdbInput,
  SqliteInput
)
export type ConnectionInput = typeof ConnectionInput.Type

/** What a read shows instead of a secret. */
const SecretFlags = {
  password_set: Schema.Boolean,
  access_token_set: Schema.Boolean,
  credentials_json_set: Schema.Boolean
}

export class Connection extends Schema.Class<Connection>("Connection")({
  name: Schema.String,
  db_type: DbType,
  description: Schema.NullOr(Schema.String),
  tags: Schema.Array(Schema.String),
  host: Schema.optional(Schema.String),
  port: Schema.optional(Schema.Int),
  database: Schema.optional(Schema.String),
  username: Schema.optional(Schema.String),
  account: Schema.optional(Schema.String),
  warehouse: Schema.optional(Schema.String),
  role: Schema.optional(Schema.String),
  http_path: Schema.optional(Schema.String),
  project: Schema.optional(Schema.String),
  dataset: Schema.optional(Schema.String),
  api_endpoint: Schema.optional(Schema.String),
  location: Schema.optional(Schema.String),
  maximum_bytes_billed: Schema.optional(Schema.Number),
  protocol: Schema.optional(Schema.String),
  catalog: Schema.optional(Schema.String),
  schema_name: Schema.optional(Schema.String),
  tls: Schema.optional(
    Schema.Struct({
      mode: Schema.Literal(...TLS_MODES),
      ca_pem: Schema.optional(Schema.String),
      client_cert_pem: Schema.optional(Schema.String),
      client_key_pem_set: Schema.Boolean
    })
  ),
  branching: Schema.optional(
    Schema.Struct({
      service: Schema.Literal("neon"),
      project_id: Schema.String,
      parent_branch_id: Schema.NullOr(Schema.String),
      api_key_set: Schema.Boolean
    })
  ),
  ssh_tunnel: Schema.optional(
    Schema.Struct({
      host: Schema.String,
      port: Schema.Int,
      username: Schema.String,
      private_key_set: Schema.Boolean,
      passphrase_set: Schema.Boolean,
      password_set: Schema.Boolean,
      host_key_fingerprint: Schema.NullOr(Schema.String)
    })
  ),
  query_timeout: Schema.optional(Schema.Int),
  connection_timeout: Schema.optional(Schema.Int),
  max_rows: Schema.optional(Schema.Int),
  schema_include: Schema.optional(Schema.Array(Schema.String)),
  schema_exclude: Schema.optional(Schema.Array(Schema.String)),
  schema_refresh_interval: Schema.optional(Schema.Int),
  blocked_tables: Schema.optional(Schema.Array(Schema.String)),
  allowed_tables: Schema.optional(Schema.Array(Schema.String)),
  allowed_functions: Schema.optional(Schema.Array(Schema.String)),
  result_cache_ttl: Schema.optional(Schema.Int),
  ...SecretFlags,
  /** "env" for connections configured by SP_CONNECTION_<NAME>: read-only through the API. */
  source: Schema.Literal("api", "env"),
  read_only: Schema.Boolean,
  created_at: Schema.Date,
  updated_at: Schema.Date
}) {}

export const CloneConnection = Schema.Struct({ name: ConnectionName }).annotations(strict)

export const ConnectionTestResult = Schema.Struct({
  ok: Schema.Boolean,
  latency_ms: Schema.Number,
  error: Schema.optional(Schema.String),
  step: Schema.optional(Schema.String)
})
export type ConnectionTestResult = typeof ConnectionTestResult.Type

/** What this build's connector for a db_type can do. */
export const Capabilities = Schema.Struct({
  db_type: DbType,
  available: Schema.Boolean,
  driver: Schema.NullOr(Schema.String),
  transport: Schema.NullOr(Schema.String),
  read_only_guard: Schema.NullOr(Schema.String),
  server_side_cancel: Schema.Boolean,
  ssh_tunnel: Schema.Boolean,
  tls: Schema.Boolean,
  local_file: Schema.Boolean,
  limit_syntax: Schema.NullOr(Schema.String),
  verified_against: Schema.NullOr(Schema.String)
})
