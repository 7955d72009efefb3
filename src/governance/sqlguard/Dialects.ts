import type { DbType } from "../../domain/Connection"
import { BIGQUERY_FUNCTIONS } from "./functions/Bigquery"
import { CLICKHOUSE_FUNCTIONS } from "./functions/Clickhouse"
import { DATABRICKS_FUNCTIONS } from "./functions/Databricks"
import { DUCKDB_FUNCTIONS } from "./functions/Duckdb"
import { MSSQL_FUNCTIONS } from "./functions/Mssql"
import { MYSQL_FUNCTIONS } from "./functions/Mysql"
import { POSTGRES_FUNCTIONS, REDSHIFT_FUNCTIONS } from "./functions/Postgres"
import { SNOWFLAKE_FUNCTIONS } from "./functions/Snowflake"
import { SQLITE_FUNCTIONS } from "./functions/Sqlite"
import { TRINO_FUNCTIONS } from "./functions/Trino"
import type { LexicalRules } from "./Lexer"
import { SYSTEM_RELATIONS, type SystemRelations } from "./SystemRelations"

/** The sqlparser-rs dialect names this build uses (trino has none of its own: generic). */
export type SqlparserDialect =
  | "mysql"
  | "mssql"
  | "snowflake"
  | "bigquery"
  | "clickhouse"
  | "databricks"
  | "generic"
  | "duckdb"
  | "sqlite"

export interface DialectProfile {
  readonly dbType: DbType
  /** postgresql and redshift parse with PostgreSQL's own grammar; the rest with sqlparser-rs. */
  readonly grammar: "postgres" | "sqlparser"
  readonly sqlparser: SqlparserDialect
  /** DuckDB's grammar descends from PostgreSQL's: where libpg_query also parses it, both walks must allow it. */
  readonly postgresCrossCheck: boolean
  readonly lexical: LexicalRules
  readonly limitSyntax: "limit" | "top"
  /** Most name parts a table reference may have; more is a linked server or another catalog. */
  readonly maxNameParts: number
  /** The reviewed allow-list: the only functions and table functions a statement may call (lower-case). */
  readonly functions: ReadonlySet<string>
  /** Schemas a built-in function may be qualified with (`pg_catalog.lower`). */
  readonly builtinSchemas: ReadonlySet<string>
  /** `x.f()` calls f on x (DuckDB): a qualified name whose last part is allowed is that method call. */
  readonly methodCalls: boolean
  /** Functions no connection's allowed_functions can add: they run SQL text or reach files, sessions or settings; a trailing `*` matches a prefix. */
  readonly neverFunctions: ReadonlyArray<string>
  /** The engine's own schemas and which of their relations are metadata. */
  readonly relations: SystemRelations
  /** Table names that are really files, URLs or stages (DuckDB `FROM 'x.csv'`, Snowflake `@stage`). */
  readonly pathTables: boolean
  /** Settings the connector pins on every session where `lexical` reads both ways: what a token is (a string or a name) as the database reads it. */
  readonly sessionPins?: Partial<LexicalRules>
}

/** How the database reads a statement sent through its connector: the guard's rules with the settings the session pins. */
export const sessionLexical = (profile: DialectProfile): LexicalRules => ({ ...profile.lexical, ...profile.sessionPins })

// Where the guard does not know how an engine reads comments and double quotes, it reads them both ways (and refuses what they disagree on).
const plain: LexicalRules = {
  backslashEscapes: false,
  escapeStrings: false,
  hashComments: false,
  bracketIdentifiers: false,
  dollarQuotes: false,
  dashCommentNeedsSpace: false,
  nestedComments: "either",
  carriageReturnEndsLine: "either",
  doubleQuotedStrings: false,
  executableComments: false
}
// PostgreSQL's scanner, and DuckDB's, which descends from it.
const postgresComments = { nestedComments: true, carriageReturnEndsLine: true } as const

// Every dialect: a name resolved from a string at run time escapes the table policy.
const EVERYWHERE = ["identifier"]

const POSTGRES_NEVER = [
  ...EVERYWHERE,
  "ts_stat",
  "ts_rewrite",
  "ts_debug",
  "crosstab*",
  "connectby",
  "normal_rand",
  "current_setting",
  "pg_settings_*",
  "pg_show_all_*",
  "pg_stat_*",
  "pg_statistics_*",
  "brin_*",
  "gin_clean_pending_list",
  "setseed",
  "pg_copy_*",
  "pg_get_wal_*",
  "pg_walfile_*",
  "pg_current_*",
  "txid_*",
  "inet_client_*",
  "inet_server_*",
  "pg_backend_pid",
  "pg_blocking_pids",
  "pg_tablespace_location",
  "pg_relation_filepath",
  "pg_relation_filenode",
  "pg_sleep*",
  "pg_read_*",
  "pg_ls_*",
  "pg_stat_file",
  "pg_file_*",
  "pg_logdir_ls",
  "lo_*",
  "dblink*",
  "set_config",
  "nextval",
  "setval",
  "pg_advisory*",
  "pg_try_advisory*",
  "pg_terminate_backend",
  "pg_cancel_backend",
  "pg_reload_conf",
  "pg_rotate_logfile",
  "pg_switch_wal",
  "pg_create_*",
  "pg_drop_*",
  "pg_replication_*",
  "pg_logical_*",
  "pg_promote",
  "pg_notify",
  "pg_import_system_collations",
  "pg_wal_replay_*",
  "pg_backup_*",
  "pg_start_backup",
  "pg_stop_backup",
  "pg_export_snapshot",
  "pg_log_backend_memory_contexts",
  "query_to_xml*",
  "cursor_to_xml*",
  "table_to_xml*",
  "schema_to_xml*",
  "database_to_xml*",
  "txid_current",
  "pg_current_xact_id"
]

const DUCKDB_NEVER = [
  ...POSTGRES_NEVER,
  "json_execute_serialized_sql",
  "json_serialize_sql",
  "json_deserialize_sql",
  "json_serialize_plan",
  "error",
  "getvariable",
  "stats",
  "pragma_*",
  "duckdb_settings",
  "duckdb_databases",
  "duckdb_extensions",
  "duckdb_logs*",
  "duckdb_variables",
  "duckdb_temporary_files",
  "duckdb_memory",
  "duckdb_prepared_statements",
  "summary",
  "histogram_values",
  "which_secret",
  "storage_info",
  "currval",
  "sleep_ms",
  "write_log",
  "read_*",
  "glob",
  "parquet_*",
  "sniff_csv",
  "csv_scan",
  "query",
  "query_table",
  "iceberg_*",
  "delta_scan",
  "sqlite_*",
  "postgres_*",
  "mysql_*",
  "getenv",
  "duckdb_secrets",
  "load_aws_credentials"
]

const allowList = (functions: ReadonlyArray<string>, builtinSchemas: ReadonlyArray<string>, methodCalls = false) => ({
  functions: new Set(functions.map((f) => f.toLowerCase())),
  builtinSchemas: new Set(builtinSchemas),
  methodCalls
})

const postgresFamily = (dbType: "postgresql" | "redshift"): DialectProfile => ({
  dbType,
  grammar: "postgres",
  sqlparser: "generic",
  postgresCrossCheck: false,
  // The postgresql connector pins standard_conforming_strings on; Redshift's setting is its own.
  lexical: { ...plain, ...postgresComments, dollarQuotes: true, escapeStrings: true, backslashEscapes: dbType === "redshift" ? "either" : false },
  limitSyntax: "limit",
  maxNameParts: 3,
  ...allowList(dbType === "postgresql" ? POSTGRES_FUNCTIONS : REDSHIFT_FUNCTIONS, ["pg_catalog"]),
  neverFunctions: POSTGRES_NEVER,
  relations: SYSTEM_RELATIONS[dbType],
  pathTables: false
})

export const DIALECTS: Record<DbType, DialectProfile> = {
  postgresql: postgresFamily("postgresql"),
  redshift: postgresFamily("redshift"),
  duckdb: {
    dbType: "duckdb",
    grammar: "sqlparser",
    sqlparser: "duckdb",
    postgresCrossCheck: true,
    // sqlparser-rs's DuckDB dialect has no E'…' strings: one whose escapes matter reads otherwise to the guard's parser, and is refused.
    lexical: { ...plain, ...postgresComments, dollarQuotes: true, escapeStrings: "either" },
    limitSyntax: "limit",
    maxNameParts: 3,
    ...allowList(DUCKDB_FUNCTIONS, ["main", "system.main", "pg_catalog"], true),
    neverFunctions: DUCKDB_NEVER,
    relations: SYSTEM_RELATIONS.duckdb,
    pathTables: true
  },
  mysql: {
    dbType: "mysql",
    grammar: "sqlparser",
    sqlparser: "mysql",
    postgresCrossCheck: false,
    // The connector pins backslash escapes and "…" strings (no ANSI_QUOTES), but a statement whose meaning would hang on that second setting is refused too; comments do not nest and end at a newline.
    lexical: { ...plain, backslashEscapes: true, hashComments: true, dashCommentNeedsSpace: true, nestedComments: false, carriageReturnEndsLine: false, doubleQuotedStrings: "either", executableComments: true },
    sessionPins: { doubleQuotedStrings: true },
    limitSyntax: "limit",
    maxNameParts: 2,
    ...allowList(MYSQL_FUNCTIONS, []),
    relations: SYSTEM_RELATIONS.mysql,
    neverFunctions: [
      ...EVERYWHERE,
      "load_file",
      "sleep",
      "benchmark",
      "get_lock",
      "release_lock",
      "release_all_locks",
      "is_free_lock",
      "is_used_lock",
      "master_pos_wait",
      "master_gtid_wait",
      "updatexml",
      "extractvalue",
      "source_pos_wait",
      "wait_for_executed_gtid_set",
      "wait_until_sql_thread_after_gtids",
      "sys_exec",
      "sys_eval",
      "lastval",
      "nextval",
      "setval"
    ],
    pathTables: false
  },
  mssql: {
    dbType: "mssql",
    grammar: "sqlparser",
    sqlparser: "mssql",
    postgresCrossCheck: false,
    // T-SQL nests block comments; QUOTED_IDENTIFIER OFF makes "…" a string.
    lexical: { ...plain, bracketIdentifiers: true, nestedComments: true, doubleQuotedStrings: "either" },
    limitSyntax: "top",
    maxNameParts: 3,
    ...allowList(MSSQL_FUNCTIONS, ["sys"]),
    relations: SYSTEM_RELATIONS.mssql,
    neverFunctions: [...EVERYWHERE, "xp_*", "sp_*", "openrowset", "openquery", "opendatasource", "openxml"],
    pathTables: false
  },
  snowflake: {
    dbType: "snowflake",
    grammar: "sqlparser",
    sqlparser: "snowflake",
    postgresCrossCheck: false,
    lexical: { ...plain, backslashEscapes: true, dollarQuotes: true, nestedComments: false },
    limitSyntax: "limit",
    maxNameParts: 3,
    // RESULT_SCAN reads an earlier statement's raw, unmasked result, perhaps another caller's on a pooled session.
    ...allowList(SNOWFLAKE_FUNCTIONS, []),
    relations: SYSTEM_RELATIONS.snowflake,
    neverFunctions: [...EVERYWHERE, "system$*", "external_function*", "infer_schema", "result_scan"],
    pathTables: true
  },
  bigquery: {
    dbType: "bigquery",
    grammar: "sqlparser",
    sqlparser: "bigquery",
    postgresCrossCheck: false,
    lexical: { ...plain, backslashEscapes: true, hashComments: true, doubleQuotedStrings: true, nestedComments: false },
    limitSyntax: "limit",
    maxNameParts: 3,
    ...allowList(BIGQUERY_FUNCTIONS, []),
    relations: SYSTEM_RELATIONS.bigquery,
    neverFunctions: [...EVERYWHERE, "external_query", "external_object_transform"],
    pathTables: false
  },
  clickhouse: {
    dbType: "clickhouse",
    grammar: "sqlparser",
    sqlparser: "clickhouse",
    postgresCrossCheck: false,
    lexical: { ...plain, backslashEscapes: true, hashComments: true },
    limitSyntax: "limit",
    maxNameParts: 2,
    ...allowList(CLICKHOUSE_FUNCTIONS, []),
    relations: SYSTEM_RELATIONS.clickhouse,
    neverFunctions: [
      ...EVERYWHERE,
      "file*",
      "url*",
      "s3*",
      "hdfs*",
      "azure*",
      "gcs*",
      "remote*",
      "cluster*",
      "mysql",
      "postgresql",
      "jdbc",
      "odbc",
      "sqlite",
      "mongodb",
      "redis",
      "input",
      "executable*",
      "iceberg*",
      "deltalake*",
      "hudi*",
      "hive",
      "sleep*",
      "dictionary",
      // merge(db, 'regex') reads every table whose name matches, around the table policy.
      "merge",
      "kafka*",
      "nats*",
      "rabbitmq*"
    ],
    pathTables: false
  },
  databricks: {
    dbType: "databricks",
    grammar: "sqlparser",
    sqlparser: "databricks",
    postgresCrossCheck: false,
    // Spark SQL nests bracketed comments.
    lexical: { ...plain, backslashEscapes: true, doubleQuotedStrings: true, nestedComments: true },
    limitSyntax: "limit",
    maxNameParts: 3,
    ...allowList(DATABRICKS_FUNCTIONS, []),
    relations: SYSTEM_RELATIONS.databricks,
    neverFunctions: [
      ...EVERYWHERE,
      "read_*",
      "secret",
      "try_secret",
      "list_secrets",
      "java_method",
      "reflect",
      "try_reflect",
      "http_request",
      "cloud_files_state",
      "ai_*",
      "vector_search"
    ],
    pathTables: true
  },
  trino: {
    dbType: "trino",
    grammar: "sqlparser",
    sqlparser: "generic",
    postgresCrossCheck: false,
    lexical: { ...plain, nestedComments: false },
    limitSyntax: "limit",
    maxNameParts: 3,
    ...allowList(TRINO_FUNCTIONS, []),
    relations: SYSTEM_RELATIONS.trino,
    neverFunctions: [...EVERYWHERE, "query", "raw_query", "system.*"],
    pathTables: false
  },
  sqlite: {
    dbType: "sqlite",
    grammar: "sqlparser",
    sqlparser: "sqlite",
    postgresCrossCheck: false,
    lexical: { ...plain, bracketIdentifiers: true, nestedComments: false, carriageReturnEndsLine: false },
    limitSyntax: "limit",
    maxNameParts: 2,
    ...allowList(SQLITE_FUNCTIONS, []),
    relations: SYSTEM_RELATIONS.sqlite,
    neverFunctions: [...EVERYWHERE, "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile*", "sqlar_*", "fsdir", "lsmode"],
    pathTables: false
  }
}

/** Whether a function named `parts` (schema-qualified or not) matches one of these patterns; a trailing `*` matches a prefix. */
export const matchesFunction = (patterns: ReadonlyArray<string>, parts: ReadonlyArray<string>): string | undefined => {
  const last = (parts.at(-1) ?? "").toLowerCase()
  const full = parts.join(".").toLowerCase()
  return patterns.find((pattern) => {
    const prefix = pattern.endsWith("*") ? pattern.slice(0, -1) : undefined
    if (prefix === undefined) return pattern.includes(".") ? full === pattern : last === pattern
    return prefix.includes(".") ? full.startsWith(prefix) : last.startsWith(prefix)
  })
}

/**
 * The functions a check allows beyond the dialect's list: a connection's allowed_functions
 * (lower-cased), or "any" where nothing runs and only the statement's shape is wanted (the
 * lineage of a view's definition).
 */
export type FunctionAllowance = ReadonlySet<string> | "any"

/**
 * Why a call of the function named `parts` is refused, or undefined when it may run: a built-in
 * on the dialect's reviewed list (unqualified, or qualified with a built-in schema), or a name
 * the connection added with allowed_functions, unless it is one no connection can add.
 */
export const functionRefusal = (profile: DialectProfile, parts: ReadonlyArray<string>, extra: FunctionAllowance): string | undefined => {
  if (extra === "any") return undefined
  const lower = parts.map((p) => p.toLowerCase())
  const name = lower.at(-1) ?? ""
  const qualifier = lower.slice(0, -1).join(".")
  const never = matchesFunction(profile.neverFunctions, lower)
  if (never !== undefined) return `the function ${parts.join(".")} is never allowed (it runs SQL held in a string, or reaches files, sessions, settings or statistics)`
  if (extra.has(lower.join("."))) return undefined
  const builtin = qualifier === "" || profile.builtinSchemas.has(qualifier) || profile.methodCalls
  if (builtin && profile.functions.has(name)) return undefined
  return `the function ${parts.join(".")} is not on the ${profile.dbType} allow-list of read-only functions; if it is one of your own pure functions, add it to the connection's allowed_functions`
}
