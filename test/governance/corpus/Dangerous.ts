import type { DbType } from "../../../src/domain/Connection"

/**
 * The dangerous cores the guard fuzzer (../GuardFuzz.test.ts) wraps in random contexts: per dialect,
 * functions no read may call (never-allowed, or simply not on the reviewed allow-list), functions
 * that run SQL held in a string, and the engine's relations that carry data. Each must be refused
 * wherever it appears and however its name is written.
 */
export interface DangerousFunction {
  /** The schemas the engine finds it in unqualified (`pg_catalog`, `public` for an extension's). */
  readonly schemas: ReadonlyArray<string>
  readonly name: string
  readonly args: string
  /** A table function: the alias (and column list) that follows it in FROM. */
  readonly alias?: string
}

export interface DangerousRelation {
  /** The schemas it resolves in when written unqualified; an empty list when `parts` must be written whole. */
  readonly schemas: ReadonlyArray<string>
  readonly parts: ReadonlyArray<string>
}

export interface DangerousCores {
  readonly functions: ReadonlyArray<DangerousFunction>
  readonly relations: ReadonlyArray<DangerousRelation>
  /** Functions that run the SQL text they are given (quoted by the caller as a literal). */
  readonly executors: ReadonlyArray<(literal: string) => DangerousFunction>
}

const fn = (schemas: ReadonlyArray<string>, name: string, args: string, alias?: string): DangerousFunction =>
  alias === undefined ? { schemas, name, args } : { schemas, name, args, alias }
const rel = (schemas: ReadonlyArray<string>, ...parts: Array<string>): DangerousRelation => ({ schemas, parts })

const PG = ["pg_catalog"]
const EXT = ["public"]

const postgresFunctions: ReadonlyArray<DangerousFunction> = [
  fn(PG, "ts_rewrite", "'a'::tsquery, 'select ''a''::tsquery, ''b''::tsquery'"),
  fn(PG, "ts_stat", "'select to_tsvector(secret) from canary'", "t"),
  fn(PG, "ts_debug", "'x'", "t"),
  fn(EXT, "crosstab", "'select 1, 2, 3'", "t(a int, b int)"),
  fn(EXT, "crosstab2", "'select 1, 2, 3'", "t"),
  fn(EXT, "connectby", "'canary', 'id', 'id', '1', 0", "t(a int, b int, c int)"),
  fn(EXT, "normal_rand", "1, 0, 1", "t"),
  fn(PG, "query_to_xml", "'select * from canary', true, true, ''"),
  fn(PG, "table_to_xml", "'canary', true, true, ''"),
  fn(PG, "schema_to_xml", "'public', true, true, ''"),
  fn(PG, "database_to_xml", "true, true, ''"),
  fn(PG, "cursor_to_xml", "'c', 1, true, true, ''"),
  fn(EXT, "dblink", "'dbname=postgres', 'select 1'", "t(a int)"),
  fn(EXT, "dblink_exec", "'dbname=postgres', 'delete from canary'"),
  fn(EXT, "dblink_connect", "'c', 'dbname=postgres'"),
  fn(PG, "pg_read_file", "'/etc/passwd'"),
  fn(PG, "pg_read_binary_file", "'/etc/passwd'"),
  fn(PG, "pg_ls_dir", "'.'"),
  fn(PG, "pg_ls_logdir", ""),
  fn(PG, "pg_stat_file", "'postgresql.conf'"),
  fn(PG, "lo_import", "'/etc/passwd'"),
  fn(PG, "lo_get", "1"),
  fn(PG, "current_setting", "'data_directory'"),
  fn(PG, "set_config", "'search_path', 'other', false"),
  fn(PG, "pg_show_all_settings", "", "t"),
  fn(PG, "pg_stat_reset", ""),
  fn(PG, "pg_stat_get_activity", "null", "t"),
  fn(PG, "pg_stat_statements", "true", "t"),
  fn(PG, "setseed", "0.5"),
  fn(PG, "brin_summarize_new_values", "'canary_idx'::regclass"),
  fn(PG, "gin_clean_pending_list", "'canary_idx'::regclass"),
  fn(PG, "pg_sleep", "1"),
  fn(PG, "nextval", "'seq'"),
  fn(PG, "setval", "'seq', 1"),
  fn(PG, "txid_current", ""),
  fn(PG, "pg_current_xact_id", ""),
  fn(PG, "pg_advisory_lock", "1"),
  fn(PG, "pg_terminate_backend", "1"),
  fn(PG, "pg_backend_pid", ""),
  fn(PG, "inet_server_addr", ""),
  fn(PG, "pg_notify", "'a', 'b'"),
  fn(PG, "pg_reload_conf", ""),
  fn(PG, "pg_relation_filepath", "'canary'"),
  fn(PG, "pg_export_snapshot", ""),
  fn(EXT, "my_own_function", "1")
]

const postgresExecutors: DangerousCores["executors"] = [
  (q) => fn(PG, "query_to_xml", `${q}, true, true, ''`),
  (q) => fn(PG, "query_to_xmlschema", `${q}, true, true, ''`),
  (q) => fn(PG, "query_to_xml_and_xmlschema", `${q}, true, true, ''`),
  (q) => fn(PG, "ts_stat", q, "t"),
  (q) => fn(PG, "ts_rewrite", `'a'::tsquery, ${q}`),
  (q) => fn(EXT, "crosstab", q, "t(a text, b text)"),
  (q) => fn(EXT, "crosstab", `${q}, 'select 1'`, "t(a text, b text)"),
  (q) => fn(EXT, "dblink", `'dbname=postgres', ${q}`, "t(a text)"),
  (q) => fn(EXT, "dblink_exec", `'dbname=postgres', ${q}`),
  (q) => fn(EXT, "dblink_send_query", `'c', ${q}`)
]

const postgresRelations: ReadonlyArray<DangerousRelation> = [
  rel(PG, "pg_stats"),
  rel(PG, "pg_stats_ext"),
  rel(PG, "pg_statistic"),
  rel(PG, "pg_statistic_ext_data"),
  rel([], "pg_toast", "pg_toast_1234"),
  rel(PG, "pg_authid"),
  rel(PG, "pg_shadow"),
  rel(PG, "pg_user_mappings"),
  rel(PG, "pg_largeobject"),
  rel(PG, "pg_stat_activity"),
  rel(PG, "pg_stat_statements"),
  rel(PG, "pg_settings"),
  rel(PG, "pg_file_settings"),
  rel(PG, "pg_hba_file_rules"),
  rel(PG, "pg_ident_file_mappings"),
  rel(PG, "pg_prepared_statements"),
  rel([], "information_schema", "user_mapping_options")
]

const duckdbFunctions: ReadonlyArray<DangerousFunction> = [
  fn(["main"], "pragma_storage_info", "'canary'", "t"),
  fn(["main"], "pragma_database_size", "", "t"),
  fn(["main"], "pragma_metadata_info", "", "t"),
  fn(["main"], "json_execute_serialized_sql", "json_serialize_sql('select * from canary')", "t"),
  fn(["main"], "json_serialize_sql", "'select 1'"),
  fn(["main"], "error", "'x'"),
  fn(["main"], "getvariable", "'x'"),
  fn(["main"], "getenv", "'HOME'"),
  fn(["main"], "current_setting", "'threads'"),
  fn(["main"], "stats", "1"),
  fn(["main"], "nextval", "'seq'"),
  fn(["main"], "currval", "'seq'"),
  fn(["main"], "setseed", "0.5"),
  fn(["main"], "sleep_ms", "1"),
  fn(["main"], "write_log", "'x'"),
  fn(["main"], "duckdb_settings", "", "t"),
  fn(["main"], "duckdb_secrets", "", "t"),
  fn(["main"], "duckdb_databases", "", "t"),
  fn(["main"], "duckdb_extensions", "", "t"),
  fn(["main"], "duckdb_variables", "", "t"),
  fn(["main"], "duckdb_memory", "", "t"),
  fn(["main"], "duckdb_temporary_files", "", "t"),
  fn(["main"], "duckdb_logs", "", "t"),
  fn(["main"], "which_secret", "'s3://b/x', 's3'", "t"),
  fn(["main"], "read_csv", "'/etc/passwd'", "t"),
  fn(["main"], "read_text", "'/etc/passwd'", "t"),
  fn(["main"], "read_blob", "'/etc/passwd'", "t"),
  fn(["main"], "glob", "'/etc/*'", "t"),
  fn(["main"], "parquet_metadata", "'/tmp/x.parquet'", "t"),
  fn(["main"], "sniff_csv", "'/etc/passwd'", "t"),
  fn(["main"], "query_table", "'canary'", "t"),
  fn(["main"], "sqlite_scan", "'/tmp/x.db', 't'", "t"),
  fn(["main"], "postgres_scan", "'host=x', 'public', 't'", "t"),
  fn(["main"], "my_macro", "1")
]

const duckdbExecutors: DangerousCores["executors"] = [
  (q) => fn(["main"], "query", q, "t"),
  (q) => fn(["main"], "json_execute_serialized_sql", `json_serialize_sql(${q})`, "t"),
  (q) => fn(["main"], "json_serialize_sql", q)
]

const duckdbRelations: ReadonlyArray<DangerousRelation> = [
  rel(["main"], "duckdb_settings"),
  rel(["main"], "duckdb_secrets"),
  rel(["main"], "duckdb_databases"),
  rel(["main"], "duckdb_temporary_files"),
  rel(["main"], "duckdb_memory"),
  rel(["main"], "pragma_storage_info"),
  rel(["pg_catalog"], "pg_settings"),
  rel(["pg_catalog"], "pg_prepared_statements"),
  rel([], "system", "main", "duckdb_settings"),
  rel([], "temp", "main", "canary")
]

const mysqlFunctions: ReadonlyArray<DangerousFunction> = [
  fn([], "updatexml", "1, concat(0x7e, version()), 1"),
  fn([], "extractvalue", "1, concat(0x7e, version())"),
  fn([], "master_gtid_wait", "'0-1-1', 1"),
  fn([], "master_pos_wait", "'bin.000001', 4, 1"),
  fn([], "source_pos_wait", "'bin.000001', 4, 1"),
  fn([], "sleep", "1"),
  fn([], "benchmark", "1000, md5('x')"),
  fn([], "load_file", "'/etc/passwd'"),
  fn([], "get_lock", "'x', 1"),
  fn([], "release_lock", "'x'"),
  fn([], "is_used_lock", "'x'"),
  fn([], "sys_exec", "'id'"),
  fn([], "lastval", "seq"),
  fn([], "setval", "seq, 1"),
  fn([], "wait_for_executed_gtid_set", "'x', 1"),
  fn([], "my_own_function", "1")
]

const mysqlRelations: ReadonlyArray<DangerousRelation> = [
  rel([], "mysql", "user"),
  rel([], "mysql", "global_priv"),
  rel([], "mysql", "column_stats"),
  rel([], "mysql", "innodb_index_stats"),
  rel([], "information_schema", "processlist"),
  rel([], "information_schema", "innodb_trx"),
  rel([], "information_schema", "global_variables"),
  rel([], "information_schema", "user_statistics"),
  rel([], "performance_schema", "events_statements_history"),
  rel([], "performance_schema", "threads"),
  rel([], "sys", "processlist")
]

const sqliteFunctions: ReadonlyArray<DangerousFunction> = [
  fn([], "load_extension", "'/tmp/evil.so'"),
  fn([], "readfile", "'/etc/passwd'"),
  fn([], "writefile", "'/tmp/x', 'y'"),
  fn([], "fts3_tokenizer", "'simple'"),
  fn([], "edit", "'x'"),
  fn([], "sqlar_uncompress", "x'00', 1"),
  fn([], "sqlite_compileoption_get", "0"),
  fn([], "fsdir", "'/'", "t"),
  fn([], "zipfile", "'/tmp/x.zip'", "t"),
  fn([], "pragma_compile_options", "", "t"),
  fn([], "pragma_database_list", "", "t"),
  fn([], "my_own_function", "1")
]

const sqliteRelations: ReadonlyArray<DangerousRelation> = [
  rel(["main"], "sqlite_stat1"),
  rel(["main"], "sqlite_stat4"),
  rel(["main"], "sqlite_dbpage"),
  rel(["main"], "pragma_compile_options"),
  rel([], "temp", "sqlite_stat1")
]

const postgres: DangerousCores = { functions: postgresFunctions, relations: postgresRelations, executors: postgresExecutors }

export const DANGEROUS: Record<DbType, DangerousCores> = {
  postgresql: postgres,
  redshift: {
    functions: postgresFunctions,
    executors: postgresExecutors,
    relations: [...postgresRelations, rel(PG, "stl_query"), rel(PG, "stl_querytext"), rel(PG, "svl_qlog"), rel(PG, "stv_recents"), rel(PG, "sys_query_history")]
  },
  duckdb: { functions: duckdbFunctions, relations: duckdbRelations, executors: duckdbExecutors },
  mysql: { functions: mysqlFunctions, relations: mysqlRelations, executors: [] },
  sqlite: { functions: sqliteFunctions, relations: sqliteRelations, executors: [] },
  mssql: {
    functions: [fn(["dbo"], "xp_cmdshell", "'whoami'"), fn(["sys"], "sp_who", ""), fn([], "openrowset", "'SQLNCLI', 'Server=x;', 'select 1'", "t"), fn([], "my_own_function", "1")],
    relations: [rel([], "sys", "sql_logins"), rel([], "sys", "dm_exec_sessions"), rel([], "master", "dbo", "spt_values"), rel(["sys"], "sysprocesses")],
    executors: [(q) => fn([], "openquery", `linked, ${q}`, "t")]
  },
  snowflake: {
    functions: [fn([], "system$wait", "1"), fn([], "result_scan", "last_query_id()", "t"), fn([], "infer_schema", "location => '@s'", "t"), fn([], "my_own_function", "1")],
    relations: [rel([], "snowflake", "account_usage", "query_history")],
    executors: []
  },
  bigquery: {
    functions: [fn([], "my_own_function", "1")],
    relations: [rel([], "region-us", "INFORMATION_SCHEMA", "JOBS")],
    executors: [(q) => fn([], "external_query", `'conn', ${q}`, "t")]
  },
  clickhouse: {
    functions: [
      fn([], "file", "'/etc/passwd', 'CSV', 'a String'", "t"),
      fn([], "url", "'http://x', CSV, 'a String'", "t"),
      fn([], "remote", "'h:9000', db, t", "t"),
      fn([], "merge", "currentDatabase(), '^canary'", "t"),
      fn([], "sleep", "1"),
      fn([], "my_own_function", "1")
    ],
    relations: [rel([], "system", "processes"), rel([], "system", "query_log")],
    executors: []
  },
  databricks: {
    functions: [fn([], "read_files", "'/Volumes/x'", "t"), fn([], "secret", "'scope', 'key'"), fn([], "java_method", "'java.lang.Runtime', 'getRuntime'"), fn([], "my_own_function", "1")],
    relations: [rel([], "system", "access", "audit")],
    executors: []
  },
  trino: {
    functions: [fn([], "my_own_function", "1")],
    relations: [rel([], "system", "runtime", "queries")],
    executors: [(q) => fn(["system"], "query", `query => ${q}`, "t")]
  }
}
