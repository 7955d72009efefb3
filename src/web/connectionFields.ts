import { Schema, SchemaAST } from "effect"
import { BRANCHING_SECRET_FIELDS, ConnectionInput, SECRET_FIELDS, TLS_SECRET_FIELDS, TUNNEL_SECRET_FIELDS } from "../domain/Connection"
import { globsOf } from "./governance"

export const FIELD_GROUPS = ["Connection", "TLS", "SSH tunnel", "Database branches", "Limits", "Schema and tables", "Description and tags"] as const
export type FieldGroup = (typeof FIELD_GROUPS)[number]

/** What a group is for, where leaving it empty is a choice the reader should know about. */
export const GROUP_NOTES: Partial<Record<FieldGroup, string>> = {
  TLS: "Leave the mode empty for a connection without TLS settings (plain text).",
  "SSH tunnel": "Leave empty to connect directly. With a tunnel, the host and port above are reached from the SSH host.",
  "Database branches": "Leave empty to make branches as template copies on this server. Set to make them on a hosted branching service (Neon's API).",
  Limits: "Empty fields take the gateway's defaults."
}

export type FieldKind = "text" | "pem" | "number" | "choice" | "list" | "tags" | "secret" | "secret-text"

export interface FormField {
  /** The field's place in the request body: `host`, `tls.mode`, `ssh_tunnel.private_key`. */
  readonly path: string
  readonly group: FieldGroup
  readonly label: string
  readonly help: string | undefined
  /** Required whenever its group is used; the TLS, SSH tunnel and branching groups are optional as a whole. */
  readonly required: boolean
  readonly kind: FieldKind
  readonly choices: ReadonlyArray<string>
}

interface About {
  readonly group?: FieldGroup
  readonly label?: string
  readonly help?: string
  readonly kind?: FieldKind
}

const tables = "One per line: table, schema.table or catalog.schema.table, * matching any run of characters."

/** Labels, groups and help for every field; `<db_type>:<path>` entries say what a field means for one type. */
const ABOUT: Readonly<Record<string, About>> = {
  description: { group: "Description and tags", help: "Shown to people and AI tools choosing a connection." },
  tags: { group: "Description and tags", kind: "tags", help: "Separated by commas, e.g. prod, finance." },
  host: { help: "Host name or IP address of the database server." },
  port: { help: "Empty: the database's usual port." },
  "snowflake:host": { help: "Empty: <account>.snowflakecomputing.com. Set it for PrivateLink or a regional host." },
  "databricks:host": { help: "The workspace host, e.g. dbc-1234abcd-5678.cloud.databricks.com." },
  "sqlite:database": { label: "Database file", help: "Path inside the gateway's data directory or a directory in SP_LOCAL_DB_DIRS." },
  "duckdb:database": { label: "Database file", help: "Path inside the gateway's data directory or a directory in SP_LOCAL_DB_DIRS." },
  schema_name: { label: "Schema", help: "The schema unqualified table names resolve to." },
  account: { help: "The account identifier, e.g. orgname-accountname or xy12345.eu-west-1." },
  http_path: { label: "HTTP path", help: "From the SQL warehouse's connection details, e.g. /sql/1.0/warehouses/1234abcd." },
  access_token: { help: "A personal access token or a service principal's token." },
  project: { help: "The Google Cloud project ID that runs and pays for the queries." },
  dataset: { help: "The dataset unqualified table names resolve to." },
  credentials_json: { label: "Service account key (JSON)", kind: "secret-text" },
  api_endpoint: { label: "API endpoint", help: "A regional or Private Service Connect endpoint instead of https://bigquery.googleapis.com." },
  location: { help: "Where queries run, e.g. EU or us-central1." },
  protocol: { help: "ClickHouse's HTTP interface, on 8123 (8443 with TLS)." },
  "tls.mode": {
    group: "TLS",
    label: "TLS mode",
    help: "require encrypts without checking the certificate; verify-ca checks it against the CA; verify-full checks the host name too."
  },
  "tls.ca_pem": { group: "TLS", label: "CA certificate (PEM)", kind: "pem", help: "The authority that signed the server's certificate, when it is not a public one." },
  "tls.client_cert_pem": { group: "TLS", label: "Client certificate (PEM)", kind: "pem", help: "For servers that authenticate clients by certificate." },
  "tls.client_key_pem": { group: "TLS", label: "Client key (PEM)", kind: "secret-text" },
  "ssh_tunnel.host": { group: "SSH tunnel", label: "SSH host", help: "The bastion the gateway connects through." },
  "ssh_tunnel.port": { group: "SSH tunnel", label: "SSH port", help: "Empty: 22." },
  "ssh_tunnel.username": { group: "SSH tunnel", label: "SSH user" },
  "ssh_tunnel.private_key": { group: "SSH tunnel", label: "Private key", kind: "secret-text", help: "OpenSSH or PEM format." },
  "ssh_tunnel.passphrase": { group: "SSH tunnel", label: "Key passphrase", help: "When the private key is encrypted." },
  "ssh_tunnel.password": { group: "SSH tunnel", label: "SSH password", help: "Instead of a private key." },
  "ssh_tunnel.host_key_fingerprint": {
    group: "SSH tunnel",
    label: "Host key fingerprint",
    help: "SHA256:… as ssh-keygen -lf prints it. Empty: the first key the SSH host shows is pinned."
  },
  "branching.service": { group: "Database branches", label: "Branching service" },
  "branching.project_id": { group: "Database branches", label: "Service project ID", help: "The service's project that holds this database." },
  "branching.parent_branch_id": { group: "Database branches", label: "Parent branch ID", help: "The service's branch holding this database. Empty: the project's default branch." },
  "branching.api_key": { group: "Database branches", label: "Service API key" },
  query_timeout: { group: "Limits", label: "Query timeout (seconds)", help: "A query running longer is cancelled. Empty: the organization's default." },
  connection_timeout: { group: "Limits", label: "Connection timeout (seconds)", help: "How long to wait for the database to accept a connection. Empty: 10." },
  max_rows: { group: "Limits", label: "Row limit", help: "The most rows a query returns, whatever the caller asks for." },
  result_cache_ttl: { group: "Limits", label: "Result cache (seconds)", help: "How long a result is served again from the gateway's memory. Empty or 0: never." },
  maximum_bytes_billed: { group: "Limits", label: "Maximum bytes billed", help: "Per query: a statement whose dry run would scan more is refused." },
  schema_include: { group: "Schema and tables", label: "Schemas to scan", kind: "list", help: "Globs, one per line: schema, or schema.table. Empty: all." },
  schema_exclude: { group: "Schema and tables", label: "Schemas to skip", kind: "list", help: "Globs, one per line: schema, or schema.table." },
  schema_refresh_interval: { group: "Schema and tables", label: "Schema refresh (seconds)", help: "Between background schema scans. Empty: a day." },
  blocked_tables: { group: "Schema and tables", kind: "list", help: `Tables no query may read. ${tables}` },
  allowed_tables: { group: "Schema and tables", kind: "list", help: `When set, queries may read only these tables. ${tables}` },
  allowed_functions: {
    group: "Schema and tables",
    kind: "list",
    help: "Your own pure functions, or built-ins the reviewed list lacks, that queries may call: fn or schema.fn, one per line."
  }
}

const SECRET_PATHS: ReadonlySet<string> = new Set([
  ...SECRET_FIELDS,
  ...TLS_SECRET_FIELDS.map((f) => `tls.${f}`),
  ...TUNNEL_SECRET_FIELDS.map((f) => `ssh_tunnel.${f}`),
  ...BRANCHING_SECRET_FIELDS.map((f) => `branching.${f}`)
])
// The form asks for these apart from the table: the type chooses the other fields, the name is the connection's identity.
const ASKED_APART = new Set(["db_type", "name"])

const underlying = (ast: SchemaAST.AST): SchemaAST.AST =>
  SchemaAST.isRefinement(ast) ? underlying(ast.from) : SchemaAST.isTransformation(ast) ? underlying(ast.to) : ast

const literalsOf = (ast: SchemaAST.AST): ReadonlyArray<string> =>
  SchemaAST.isUnion(ast) ? ast.types.flatMap((t) => literalsOf(underlying(t))) : SchemaAST.isLiteral(ast) ? [String(ast.literal)] : []

const memberOf = (dbType: string) => ConnectionInput.members.find((m) => m.fields.db_type.literals[0] === dbType)

const labelOf = (name: string) => name.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase())

const fieldsIn = (dbType: string, shape: SchemaAST.TypeLiteral, prefix: string): ReadonlyArray<FormField> =>
  shape.propertySignatures.flatMap((p): ReadonlyArray<FormField> => {
    const path = `${prefix}${String(p.name)}`
    if (ASKED_APART.has(path)) return []
    const type = underlying(p.type)
    if (SchemaAST.isTypeLiteral(type)) return fieldsIn(dbType, type, `${path}.`)
    const about = { ...ABOUT[path], ...ABOUT[`${dbType}:${path}`] }
    const valid = Schema.is(Schema.make(p.type))
    // Only the choices the gateway accepts: ClickHouse's "native" protocol is a literal it refuses.
    const choices = literalsOf(type).filter((c) => valid(c))
    const secret = SECRET_PATHS.has(path)
    const kind: FieldKind =
      about.kind ?? (secret ? "secret" : choices.length > 0 ? "choice" : SchemaAST.isTupleType(type) ? "list" : SchemaAST.isNumberKeyword(type) ? "number" : "text")
    return [
      {
        path,
        group: about.group ?? "Connection",
        label: about.label ?? labelOf(String(p.name)),
        help: about.help,
        required: !p.isOptional,
        kind,
        choices
      }
    ]
  })

/** Every field a db_type's connection takes but its name, read from the same Schema the gateway validates with. */
export const fieldsFor = (dbType: string): ReadonlyArray<FormField> => {
  const member = memberOf(dbType)
  const ast = member === undefined ? undefined : underlying(member.ast)
  return ast !== undefined && SchemaAST.isTypeLiteral(ast) ? fieldsIn(dbType, ast, "") : []
}

export const DB_TYPES: ReadonlyArray<string> = ConnectionInput.members.map((m) => m.fields.db_type.literals[0])

export const isSecret = (field: FormField) => field.kind === "secret" || field.kind === "secret-text"

const at = (source: object, path: string): unknown =>
  path.split(".").reduce<unknown>((value, key) => (typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined), source)

/** Whether a stored connection holds a secret: the API shows `<secret>_set` beside where the secret would be. */
export const secretStored = (connection: object, field: FormField) => at(connection, `${field.path}_set`) === true

const textOf = (field: FormField, value: unknown): string =>
  Array.isArray(value) ? value.join(field.kind === "tags" ? ", " : "\n") : typeof value === "string" || typeof value === "number" ? String(value) : ""

/** A stored connection, or what a pasted URL gives, as the form's text by path; secrets are never returned, so they start empty. */
export const formValuesOf = (dbType: string, source: object): Record<string, string> =>
  Object.fromEntries(
    fieldsFor(dbType).flatMap((field) => {
      const text = isSecret(field) ? "" : textOf(field, at(source, field.path))
      return text === "" ? [] : [[field.path, text]]
    })
  )

const valueOf = (field: FormField, text: string): unknown => {
  // A secret is sent exactly as typed: a password may begin or end with a space.
  if (isSecret(field)) return text === "" ? undefined : text
  const trimmed = text.trim()
  if (trimmed === "") return undefined
  if (field.kind === "number") return Number(trimmed)
  if (field.kind === "list" || field.kind === "tags") return globsOf(trimmed)
  return trimmed
}

/**
 * The form's text as a request body (without the name): numbers as numbers, lists as arrays, empty fields left out,
 * and the TLS or SSH tunnel object only when one of its fields is filled. A secret left empty is left out,
 * which an update reads as "keep the stored one".
 */
export const formInput = (dbType: string, values: Readonly<Record<string, string>>): Record<string, unknown> => {
  const body: Record<string, unknown> = { db_type: dbType }
  for (const field of fieldsFor(dbType)) {
    const value = valueOf(field, values[field.path] ?? "")
    if (value === undefined) continue
    const [head, leaf] = field.path.split(".") as [string, string | undefined]
    body[head] = leaf === undefined ? value : { ...(body[head] as object | undefined), [leaf]: value }
  }
  return body
}

const typeLiteralOf = (ast: SchemaAST.AST): SchemaAST.TypeLiteral | undefined => {
  const inner = underlying(ast)
  if (SchemaAST.isTypeLiteral(inner)) return inner
  return SchemaAST.isUnion(inner) ? inner.types.map(typeLiteralOf).find((t) => t !== undefined) : undefined
}

const pick = (shape: SchemaAST.TypeLiteral, value: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(
    shape.propertySignatures.flatMap((p) => {
      const field = value[String(p.name)]
      if (field === null || field === undefined) return []
      const nested = typeof field === "object" && !Array.isArray(field) ? typeLiteralOf(p.type) : undefined
      return [[String(p.name), nested === undefined ? field : pick(nested, field as Record<string, unknown>)]]
    })
  )

/**
 * A stored connection as the input that would recreate it: only the fields its db_type's input takes
 * (no flags like `password_set`, no timestamps). Secrets are absent, so an edit keeps the stored ones.
 */
export const inputOf = (connection: { readonly db_type: string }): Record<string, unknown> => {
  const member = memberOf(connection.db_type)
  const shape = member === undefined ? undefined : typeLiteralOf(member.ast)
  return shape === undefined ? {} : pick(shape, connection as Record<string, unknown>)
}
