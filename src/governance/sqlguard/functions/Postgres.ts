import { STANDARD_FUNCTIONS } from "./Standard"

/**
 * PostgreSQL functions reviewed as pure reads: they compute from their arguments, or read only
 * metadata the session may see. Never here: anything that runs SQL held in a string (ts_stat,
 * ts_rewrite, query_to_xml and the other *_to_xml, crosstab), touches files, sessions, locks,
 * replication, statistics or configuration, or advances a sequence or transaction id.
 * test/governance/CatalogWalk.test.ts checks this list against pg_proc on the real server.
 */
export const POSTGRES_FUNCTIONS: ReadonlyArray<string> = [
  ...STANDARD_FUNCTIONS,
  // aggregates and windows beyond the standard
  "array_agg", "string_agg", "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or", "every", "json_agg", "jsonb_agg",
  "json_object_agg", "jsonb_object_agg", "xmlagg", "mode", "range_agg", "range_intersect_agg",
  // numbers
  "cbrt", "div", "factorial", "gcd", "lcm", "min_scale", "scale", "trim_scale", "pow", "acosd", "asind", "atand", "atan2d",
  "cosd", "cot", "cotd", "sind", "tand", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "log", "numeric", "int2", "int4",
  "int8", "float4", "float8", "to_number", "num_nulls", "num_nonnulls", "bit_count", "bit_length", "get_bit", "get_byte",
  "set_bit", "set_byte",
  // strings and bytes
  "btrim", "format", "normalize", "is_normalized", "quote_ident", "quote_literal", "quote_nullable", "regexp_count",
  "regexp_instr", "regexp_like", "regexp_match", "regexp_matches", "regexp_split_to_array", "regexp_split_to_table",
  "regexp_substr", "string_to_array", "string_to_table", "to_ascii", "to_hex", "unistr", "overlay", "convert",
  "convert_from", "convert_to", "encode", "decode", "sha224", "sha256", "sha384", "sha512", "text", "similar_to_escape",
  "like_escape", "textlen", "array_to_string",
  // dates and times
  "age", "clock_timestamp", "date_bin", "isfinite", "justify_days", "justify_hours", "justify_interval", "make_date",
  "make_interval", "make_time", "make_timestamp", "make_timestamptz", "statement_timestamp", "timeofday",
  "transaction_timestamp", "timezone", "overlaps", "date", "to_timestamp",
  // json
  "to_json", "to_jsonb", "array_to_json", "row_to_json", "json_build_array", "jsonb_build_array", "json_build_object",
  "jsonb_build_object", "json_object", "jsonb_object", "json_array_elements", "jsonb_array_elements",
  "json_array_elements_text", "jsonb_array_elements_text", "json_array_length", "jsonb_array_length", "json_each",
  "jsonb_each", "json_each_text", "jsonb_each_text", "json_extract_path", "jsonb_extract_path", "json_extract_path_text",
  "jsonb_extract_path_text", "json_object_keys", "jsonb_object_keys", "json_populate_record", "jsonb_populate_record",
  "json_populate_recordset", "jsonb_populate_recordset", "json_to_record", "jsonb_to_record", "json_to_recordset",
  "jsonb_to_recordset", "json_strip_nulls", "jsonb_strip_nulls", "jsonb_set", "jsonb_set_lax", "jsonb_insert",
  "jsonb_path_exists", "jsonb_path_match", "jsonb_path_query", "jsonb_path_query_array", "jsonb_path_query_first",
  "jsonb_path_exists_tz", "jsonb_path_match_tz", "jsonb_path_query_tz", "jsonb_path_query_array_tz",
  "jsonb_path_query_first_tz", "jsonb_pretty", "json_typeof", "jsonb_typeof",
  // arrays and ranges
  "array_append", "array_cat", "array_dims", "array_fill", "array_length", "array_lower", "array_ndims", "array_position",
  "array_positions", "array_prepend", "array_remove", "array_replace", "array_upper", "cardinality", "trim_array", "unnest",
  "generate_subscripts", "generate_series", "isempty", "lower_inc", "upper_inc", "lower_inf", "upper_inf", "range_merge",
  "multirange", "int4range", "int8range", "numrange", "tsrange", "tstzrange", "daterange", "int4multirange",
  "int8multirange", "nummultirange", "tsmultirange", "tstzmultirange", "datemultirange",
  // text search (never ts_stat, ts_rewrite or ts_debug)
  "to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery", "ts_rank", "ts_rank_cd",
  "ts_headline", "setweight", "strip", "tsvector_to_array", "array_to_tsvector", "numnode", "querytree", "ts_delete",
  "ts_filter", "get_current_ts_config", "json_to_tsvector", "jsonb_to_tsvector",
  // network addresses, enums, uuids
  "abbrev", "broadcast", "family", "host", "hostmask", "masklen", "netmask", "network", "set_masklen", "inet_merge",
  "inet_same_family", "enum_first", "enum_last", "enum_range", "gen_random_uuid",
  // xml built from values (never *_to_xml, which run queries)
  "xmlcomment", "xmlconcat2", "xmlexists", "xpath", "xpath_exists", "xml_is_well_formed", "xml_is_well_formed_document",
  "xml_is_well_formed_content",
  // metadata the session may already read
  "current_database", "current_schema", "current_schemas", "current_user", "session_user", "version", "pg_typeof", "pg_column_size", "format_type", "col_description", "obj_description",
  "shobj_description", "pg_get_viewdef", "pg_get_constraintdef", "pg_get_indexdef", "pg_get_expr", "pg_get_functiondef",
  "pg_get_function_arguments", "pg_get_function_identity_arguments", "pg_get_function_result", "pg_get_keywords",
  "pg_get_partkeydef", "pg_get_triggerdef", "pg_get_ruledef", "pg_get_serial_sequence", "pg_get_userbyid",
  "pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible", "to_regclass", "to_regtype", "to_regproc",
  "to_regprocedure", "to_regnamespace", "to_regrole", "to_regoper", "to_regoperator", "to_regcollation",
  "has_table_privilege", "has_column_privilege", "has_any_column_privilege", "has_schema_privilege",
  "has_database_privilege", "has_function_privilege", "has_sequence_privilege", "pg_has_role", "pg_size_pretty",
  "pg_size_bytes", "pg_encoding_to_char", "pg_options_to_table", "pg_get_statisticsobjdef_columns"
]

/** VOLATILE in pg_proc, and still only a read: they return something new each call, nothing more. */
export const POSTGRES_HARMLESS_VOLATILE: ReadonlyArray<string> = ["random", "clock_timestamp", "timeofday", "gen_random_uuid"]

/** Redshift keeps PostgreSQL's functions (a subset) and adds its own. */
export const REDSHIFT_FUNCTIONS: ReadonlyArray<string> = [
  ...POSTGRES_FUNCTIONS,
  "listagg", "median", "nvl", "nvl2", "decode", "getdate", "sysdate", "dateadd", "datediff", "date_add", "add_months",
  "months_between", "convert_timezone", "json_extract_path_text", "json_extract_array_element_text", "json_parse",
  "json_serialize", "is_valid_json", "is_valid_json_array", "approximate", "ratio_to_report", "charindex", "len",
  "strtol", "crc32", "func_sha1", "sha1", "sha2", "split_to_array", "array_flatten", "subarray", "get_array_length",
  "last_day", "next_day", "trunc", "timestamp_cmp", "bpcharcmp", "btrim", "textlen"
]
