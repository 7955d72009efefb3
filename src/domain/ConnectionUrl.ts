import { Either, Schema } from "effect"
import { ConnectionInput, type DbType } from "./Connection"
import { issueMessages } from "./ParseIssues"

/** Connection fields read from a URL: everything but `name`, which a URL does not carry. */
export type UrlFields = { readonly db_type: DbType } & Record<string, unknown>

const SCHEMES: Record<string, DbType> = {
  postgresql: "postgresql",
  postgres: "postgresql",
  mysql: "mysql",
  mariadb: "mysql",
  mssql: "mssql",
  sqlserver: "mssql",
  redshift: "redshift",
  clickhouse: "clickhouse",
  "clickhouse+http": "clickhouse",
  "clickhouse+https": "clickhouse",
  trino: "trino",
  snowflake: "snowflake",
  bigquery: "bigquery",
  databricks: "databricks",
  duckdb: "duckdb",
  sqlite: "sqlite"
}

/** The scheme each type's URL is built with. */
const CANONICAL: Record<DbType, string> = {
  postgresql: "postgresql",
  mysql: "mysql",
  mssql: "mssql",
  redshift: "redshift",
  clickhouse: "clickhouse+http",
  trino: "trino",
  snowflake: "snowflake",
  bigquery: "bigquery",
  databricks: "databricks",
  duckdb: "duckdb",
  sqlite: "sqlite"
}

export const URL_FORMS: Record<DbType, string> = {
  postgresql: "postgresql://user:password@host:5432/database?sslmode=require",
  mysql: "mysql://user:password@host:3306/database?ssl-mode=REQUIRED",
  mssql: "mssql://user:password@host:1433/database (or sqlserver://…)",
  redshift: "redshift://user:password@cluster.region.redshift.amazonaws.com:5439/database",
  clickhouse: "clickhouse+http://user:password@host:8123/database (clickhouse+https:// or clickhouse:// also accepted)",
  trino: "trino://user:password@host:8080/catalog/schema",
  snowflake: "snowflake://user:password@account/database/schema?warehouse=WH&role=ROLE",
  bigquery: "bigquery://project/dataset?location=EU",
  databricks: "databricks://token:ACCESS_TOKEN@host/?http_path=/sql/1.0/warehouses/ID&catalog=main&schema=default",
  duckdb: "duckdb:path/to/file.duckdb (or duckdb:///absolute/path.duckdb)",
  sqlite: "sqlite:path/to/file.db (or sqlite:///absolute/path.db)"
}

// libpq sslmode and MySQL ssl-mode, as Sluice's TLS modes.
const SSL_MODES: Record<string, string> = {
  disable: "disable",
  allow: "allow",
  prefer: "prefer",
  require: "require",
  "verify-ca": "verify-ca",
  "verify-full": "verify-full",
  disabled: "disable",
  preferred: "prefer",
  required: "require",
  verify_ca: "verify-ca",
  verify_identity: "verify-full"
}

const decode = (part: string) => decodeURIComponent(part)
const segments = (pathname: string) => pathname.split("/").filter((s) => s.length > 0).map(decode)

/** Reads a connection URL into connection fields; a URL Sluice cannot read is a Left naming what is wrong. */
export const parseConnectionUrl = (raw: string): Either.Either<UrlFields, string> => {
  const text = raw.trim()
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text)?.[1]?.toLowerCase()
  const dbType = scheme === undefined ? undefined : SCHEMES[scheme]
  if (scheme === undefined || dbType === undefined) {
    return Either.left(`the URL must start with one of ${Object.keys(SCHEMES).map((s) => `${s}:`).join(", ")}`)
  }
  if (dbType === "duckdb" || dbType === "sqlite") {
    const rest = text.slice(scheme.length + 1)
    const path = rest.startsWith("///") ? rest.slice(2) : rest.startsWith("//") ? rest.slice(2) : rest
    return path.length === 0 ? Either.left(`${dbType}: the URL names no file (${URL_FORMS[dbType]})`) : Either.right({ db_type: dbType, database: decode(path) })
  }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return Either.left(`not a valid URL (expected ${URL_FORMS[dbType]})`)
  }
  const params = url.searchParams
  const fields: Record<string, unknown> = { db_type: dbType }
  const set = (field: string, value: string | null | undefined) => {
    if (value !== null && value !== undefined && value !== "") fields[field] = value
  }
  const path = segments(url.pathname)
  const username = decode(url.username)
  const password = decode(url.password)
  const port = url.port === "" ? undefined : Number(url.port)
  const timeout = params.get("connect_timeout") ?? params.get("connection_timeout")
  if (timeout !== null) fields["connection_timeout"] = Number(timeout)

  switch (dbType) {
    case "snowflake":
      set("account", decode(url.hostname))
      set("username", username)
      set("password", password)
      set("database", path[0])
      set("schema_name", path[1])
      set("warehouse", params.get("warehouse"))
      set("role", params.get("role"))
      return Either.right(fields as UrlFields)
    case "bigquery":
      set("project", decode(url.hostname))
      set("dataset", path[0])
      set("location", params.get("location"))
      return Either.right(fields as UrlFields)
    case "databricks":
      set("host", url.hostname)
      set("access_token", password)
      set("http_path", params.get("http_path") ?? (path.length > 0 ? `/${path.join("/")}` : null))
      set("catalog", params.get("catalog"))
      set("schema_name", params.get("schema"))
      return Either.right(fields as UrlFields)
    default:
      break
  }

  set("host", url.hostname.replace(/^\[|\]$/g, ""))
  if (port !== undefined) fields["port"] = port
  set("username", username)
  set("password", password)
  if (dbType === "trino") {
    set("catalog", path[0])
    set("schema_name", path[1])
  } else {
    set("database", path[0] ?? params.get("database"))
  }
  if (dbType === "clickhouse") {
    fields["protocol"] = "http"
    if (scheme === "clickhouse+https") fields["tls"] = { mode: "require" }
  }
  const sslMode = params.get("sslmode") ?? params.get("ssl-mode") ?? params.get("ssl_mode")
  if (sslMode !== null) {
    const mode = SSL_MODES[sslMode.toLowerCase()]
    if (mode === undefined) return Either.left(`sslmode "${sslMode}" is not one of ${Object.keys(SSL_MODES).join(", ")}`)
    fields["tls"] = { mode }
  }
  return Either.right(fields as UrlFields)
}

const SECRET_URL_FIELDS = ["password", "access_token"] as const

/**
 * The URL for a connection's fields. Secrets are never written into it: the answer names the ones left
 * out, so the caller adds them where the URL is used.
 */
export const buildConnectionUrl = (fields: UrlFields): { url: string; secrets_omitted: ReadonlyArray<string> } => {
  const f = fields as Record<string, any>
  const secrets_omitted = SECRET_URL_FIELDS.filter((k) => typeof f[k] === "string")
  const e = (value: unknown) => encodeURIComponent(String(value))
  const query = (pairs: Record<string, unknown>) => {
    const entries = Object.entries(pairs).filter(([, v]) => v !== undefined && v !== null)
    return entries.length === 0 ? "" : `?${entries.map(([k, v]) => `${k}=${e(v)}`).join("&")}`
  }
  const scheme = CANONICAL[fields.db_type]
  const user = f["username"] === undefined ? "" : `${e(f["username"])}@`
  const at = (host: string, port?: number) => `${host.includes(":") ? `[${host}]` : host}${port === undefined ? "" : `:${port}`}`
  const path = (...parts: Array<unknown>) => parts.filter((p) => p !== undefined).map(e).join("/")
  switch (fields.db_type) {
    case "duckdb":
    case "sqlite":
      return { url: `${scheme}:${f["database"]}`, secrets_omitted }
    case "snowflake":
      return {
        url: `${scheme}://${user}${e(f["account"])}/${path(f["database"], f["schema_name"])}${query({ warehouse: f["warehouse"], role: f["role"] })}`,
        secrets_omitted
      }
    case "bigquery":
      return { url: `${scheme}://${e(f["project"])}/${path(f["dataset"])}${query({ location: f["location"] })}`, secrets_omitted }
    case "databricks":
      return {
        url: `${scheme}://token@${at(f["host"])}/${query({ http_path: f["http_path"], catalog: f["catalog"], schema: f["schema_name"] })}`,
        secrets_omitted
      }
    case "trino":
      return { url: `${scheme}://${user}${at(f["host"], f["port"])}/${path(f["catalog"], f["schema_name"])}`, secrets_omitted }
    default: {
      const tlsMode = f["tls"]?.mode
      const tls = fields.db_type === "clickhouse" ? {} : { sslmode: tlsMode }
      const base = fields.db_type === "clickhouse" && tlsMode !== undefined && tlsMode !== "disable" ? "clickhouse+https" : scheme
      return { url: `${base}://${user}${at(f["host"], f["port"])}/${path(f["database"])}${query(tls)}`, secrets_omitted }
    }
  }
}

/** Whether a URL makes a complete connection: read it, then check its fields as POST /api/connections would. */
export const validateConnectionUrl = (raw: string) =>
  Either.match(parseConnectionUrl(raw), {
    onLeft: (error) => ({ valid: false, db_type: null, errors: [error] }),
    onRight: (fields) =>
      Either.match(Schema.decodeUnknownEither(ConnectionInput, { errors: "all" })({ name: "from_url", ...fields }), {
        onLeft: (error) => ({
          valid: false,
          db_type: fields.db_type,
          errors: issueMessages(error)
        }),
        onRight: () => ({ valid: true, db_type: fields.db_type, errors: [] as Array<string> })
      })
  })
