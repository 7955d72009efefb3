/**
 * SQLite functions reviewed as pure reads (core, math, date, JSON, window, FTS5 ranking), and the
 * table-valued functions that read metadata or JSON. Never: load_extension, readfile/writefile,
 * fts3_tokenizer, sqlite_log, the FTS/R-tree maintenance functions, other pragmas.
 * test/governance/CatalogWalk.test.ts checks it against pragma_function_list.
 */
export const SQLITE_FUNCTIONS: ReadonlyArray<string> = `
  abs acos acosh asin asinh atan atan2 atanh avg bm25 ceil ceiling char coalesce concat concat_ws cos cosh count
  cume_dist current_date current_time current_timestamp date datetime degrees dense_rank exp first_value floor format
  glob group_concat hex highlight if ifnull iif instr json json_array json_array_insert json_array_length
  json_error_position json_extract json_group_array json_group_object json_insert json_object json_patch json_pretty
  json_quote json_remove json_replace json_set json_type json_valid jsonb jsonb_array jsonb_array_insert jsonb_extract
  jsonb_group_array jsonb_group_object jsonb_insert jsonb_object jsonb_patch jsonb_remove jsonb_replace jsonb_set
  julianday lag last_value lead length like likelihood likely ln log log10 log2 lower ltrim match max median min mod
  nth_value ntile nullif octet_length percent_rank percentile percentile_cont percentile_disc pi pow power printf quote
  radians random randomblob rank replace round row_number rtrim sign sin sinh snippet soundex sqlite_version sqrt
  strftime string_agg substr substring subtype sum tan tanh time timediff total trim trunc typeof unhex unicode unistr
  unistr_quote unixepoch unlikely upper zeroblob
  json_each json_tree pragma_table_info pragma_table_xinfo pragma_index_list pragma_index_info pragma_index_xinfo
  pragma_foreign_key_list cast
`.trim().split(/\s+/)

/** Not deterministic in pragma_function_list, and still only a read (the FTS5 ones read the match they rank). */
export const SQLITE_HARMLESS_VOLATILE: ReadonlyArray<string> = [
  "random", "randomblob", "current_date", "current_time", "current_timestamp", "sqlite_version", "bm25", "highlight", "match", "snippet"
]
