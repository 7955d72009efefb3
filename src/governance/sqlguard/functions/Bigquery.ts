import { STANDARD_FUNCTIONS } from "./Standard"

/**
 * BigQuery functions reviewed as pure reads. Never: EXTERNAL_QUERY (runs SQL on another database), EXTERNAL_OBJECT_TRANSFORM, the ML and AI functions that call models, session and script functions.
 * No server of this kind runs here: reviewed from the vendor's function reference. A function
 * missing here is refused by name; a connection's allowed_functions adds it.
 */
export const BIGQUERY_FUNCTIONS: ReadonlyArray<string> = [
  ...STANDARD_FUNCTIONS,
  ...`
  date datetime time timestamp any_value array_agg array_concat_agg countif logical_and logical_or max_by min_by string_agg approx_count_distinct
  approx_quantiles approx_top_count approx_top_sum
  if ifnull nullif iff
  div ieee_divide safe_divide safe_multiply safe_add safe_subtract safe_negate is_inf is_nan rand range_bucket
  byte_length code_points_to_string contains_substr ends_with format from_base64 to_base64 from_hex to_hex instr
  normalize regexp_contains regexp_extract regexp_extract_all regexp_instr regexp_substr split string to_json_string
  safe_convert_bytes_to_string unicode sha1 sha256 sha512 farm_fingerprint generate_uuid
  current_datetime date_add date_diff date_sub datetime datetime_add datetime_diff datetime_sub datetime_trunc
  format_date format_datetime format_timestamp generate_date_array generate_timestamp_array last_day parse_date
  parse_datetime parse_timestamp timestamp timestamp_add timestamp_diff timestamp_micros timestamp_millis
  timestamp_seconds timestamp_sub timestamp_trunc unix_date unix_micros unix_millis unix_seconds time time_add
  time_diff time_sub time_trunc format_time parse_time
  array array_length array_reverse array_to_string generate_array offset ordinal safe_offset safe_ordinal
  json_extract json_extract_scalar json_extract_array json_query json_value json_query_array json_value_array
  parse_json to_json json_type json_object json_array
  st_geogpoint st_distance st_astext st_geogfromtext session_user safe
  `.trim().split(/\s+/)
]
