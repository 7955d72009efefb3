import type { DbType } from "../../domain/Connection"
import type { LexicalRules } from "./Lexer"

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
  /** Function and table-function names refused anywhere in a statement; a trailing `*` matches a prefix. */
  readonly deniedFunctions: ReadonlyArray<string>
  /** Table names that are really files, URLs or stages (DuckDB `FROM 'x.csv'`, Snowflake `@stage`). */
  readonly pathTables: boolean
}

const plain: LexicalRules = {
  backslashEscapes: false,
  escapeStrings: false,
  hashComments: false,
  bracketIdentifiers: false,
  dollarQuotes: false,
  dashCommentNeedsSpace: false
}

// Every dialect: a name resolved from a string at run time escapes the table policy.
const EVERYWHERE = ["identifier"]

const POSTGRES_DENIED = [
  ...EVERYWHERE,
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

const DUCKDB_DENIED = [
  ...POSTGRES_DENIED,
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

const postgresFamily = (dbType: "postgresql" | "redshift"): DialectProfile => ({
  dbType,
  grammar: "postgres",
  sqlparser: "generic",
  postgresCrossCheck: false,
  // The postgresql connector pins standard_conforming_strings on; Redshift's setting is its own.
  lexical: { ...plain, dollarQuotes: true, escapeStrings: true, backslashEscapes: dbType === "redshift" ? "either" : false },
  limitSyntax: "limit",
  maxNameParts: 3,
  deniedFunctions: POSTGRES_DENIED,
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
    lexical: { ...plain, dollarQuotes: true, escapeStrings: true },
    limitSyntax: "limit",
    maxNameParts: 3,
    deniedFunctions: DUCKDB_DENIED,
    pathTables: true
  },
  mysql: {
    dbType: "mysql",
    grammar: "sqlparser",
    sqlparser: "mysql",
    postgresCrossCheck: false,
    lexical: { ...plain, backslashEscapes: true, hashComments: true, dashCommentNeedsSpace: true },
    limitSyntax: "limit",
    maxNameParts: 2,
    deniedFunctions: [
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
    lexical: { ...plain, bracketIdentifiers: true },
    limitSyntax: "top",
    maxNameParts: 3,
    deniedFunctions: [...EVERYWHERE, "xp_*", "sp_*", "openrowset", "openquery", "opendatasource", "openxml"],
    pathTables: false
  },
  snowflake: {
    dbType: "snowflake",
    grammar: "sqlparser",
    sqlparser: "snowflake",
    postgresCrossCheck: false,
    lexical: { ...plain, backslashEscapes: true, dollarQuotes: true },
    limitSyntax: "limit",
    maxNameParts: 3,
    // RESULT_SCAN reads an earlier statement's raw, unmasked result, perhaps another caller's on a pooled session.
    deniedFunctions: [...EVERYWHERE, "system$*", "external_function*", "infer_schema", "result_scan"],
    pathTables: true
  },
  bigquery: {
    dbType: "bigquery",
    grammar: "sqlparser",
    sqlparser: "bigquery",
    postgresCrossCheck: false,
    lexical: { ...plain, backslashEscapes: true, hashComments: true },
    limitSyntax: "limit",
    maxNameParts: 3,
    deniedFunctions: [...EVERYWHERE, "external_query", "external_object_transform"],
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
    deniedFunctions: [
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
    lexical: { ...plain, backslashEscapes: true },
    limitSyntax: "limit",
    maxNameParts: 3,
    deniedFunctions: [
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
    lexical: plain,
    limitSyntax: "limit",
    maxNameParts: 3,
    deniedFunctions: [...EVERYWHERE, "query", "raw_query", "system.*"],
    pathTables: false
  },
  sqlite: {
    dbType: "sqlite",
    grammar: "sqlparser",
    sqlparser: "sqlite",
    postgresCrossCheck: false,
    lexical: { ...plain, bracketIdentifiers: true },
    limitSyntax: "limit",
    maxNameParts: 2,
    deniedFunctions: [...EVERYWHERE, "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile*", "sqlar_*", "fsdir", "lsmode"],
    pathTables: false
  }
}

/** Whether a function named `parts` (schema-qualified or not) is on the dialect's denylist. */
export const isDeniedFunction = (profile: DialectProfile, parts: ReadonlyArray<string>): string | undefined => {
  const last = (parts.at(-1) ?? "").toLowerCase()
  const full = parts.join(".").toLowerCase()
  return profile.deniedFunctions.find((pattern) => {
    const prefix = pattern.endsWith("*") ? pattern.slice(0, -1) : undefined
    if (prefix === undefined) return pattern.includes(".") ? full === pattern : last === pattern
    return prefix.includes(".") ? full.startsWith(prefix) : last.startsWith(prefix)
  })
}
