import { STANDARD_FUNCTIONS } from "./Standard"

/**
 * Databricks SQL functions reviewed as pure reads. Never: read_files and the other readers, secret/try_secret, reflect/java_method, http_request, the ai_* and vector_search functions, cloud_files_state.
 * No server of this kind runs here: reviewed from the vendor's function reference. A function
 * missing here is refused by name; a connection's allowed_functions adds it.
 */
export const DATABRICKS_FUNCTIONS: ReadonlyArray<string> = [
  ...STANDARD_FUNCTIONS,
  ...`
  collect_list collect_set array_agg any_value any some bool_and bool_or count_if max_by min_by median mode
  approx_count_distinct approx_percentile percentile kurtosis skewness first last first_value last_value listagg string_agg
  if iff ifnull nvl nvl2 nullifzero zeroifnull decode try_divide try_add try_subtract try_multiply
  cbrt rand randn bround format_number hex unhex bin conv factorial pmod positive negative shiftleft shiftright
  base64 unbase64 char_length charindex contains endswith startswith instr lcase ucase len levenshtein locate
  regexp regexp_extract regexp_extract_all regexp_like regexp_count regexp_instr regexp_substr rlike sentences soundex
  split substring_index to_binary to_number try_to_number sha sha1 sha2 crc32 uuid format_string printf
  add_months current_timezone date_add date_diff date_format date_from_unix_date date_sub datediff dateadd day dayofmonth
  dayofweek dayofyear from_unixtime from_utc_timestamp hour last_day make_date make_timestamp minute month
  months_between next_day quarter second timestamp_millis timestamp_seconds to_timestamp to_unix_timestamp
  to_utc_timestamp trunc unix_timestamp weekday weekofyear year
  array array_contains array_distinct array_except array_intersect array_join array_max array_min array_position
  array_remove array_repeat array_size array_sort array_union arrays_zip element_at explode explode_outer flatten
  posexplode inline map map_keys map_values map_from_arrays named_struct struct size slice sort_array sequence
  filter transform aggregate exists forall zip_with
  from_json to_json get_json_object json_tuple json_array_length json_object_keys schema_of_json parse_json
  current_catalog current_schema current_database current_user current_date current_timestamp typeof
  `.trim().split(/\s+/)
]
