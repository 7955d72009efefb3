import { STANDARD_FUNCTIONS } from "./Standard"

/**
 * Trino functions reviewed as pure reads. Never: query and raw_query (pass SQL to a connector), the system.* procedures and tables.
 * No server of this kind runs here: reviewed from the vendor's function reference. A function
 * missing here is refused by name; a connection's allowed_functions adds it.
 */
export const TRINO_FUNCTIONS: ReadonlyArray<string> = [
  ...STANDARD_FUNCTIONS,
  ...`
  approx_distinct approx_percentile array_agg arbitrary any_value bool_and bool_or checksum count_if every
  geometric_mean histogram listagg map_agg max_by min_by multimap_agg kurtosis skewness
  if try nullif typeof
  cbrt e from_base is_finite is_infinite is_nan nan infinity rand random to_base truncate
  chr codepoint concat_ws hamming_distance levenshtein_distance luhn_check normalize regexp_count regexp_extract
  regexp_extract_all regexp_like regexp_position regexp_split split split_to_map strpos word_stem to_utf8 from_utf8
  from_base64 to_base64 from_hex to_hex sha1 sha256 sha512 xxhash64 uuid
  current_timezone date date_add date_diff date_format date_parse day day_of_month day_of_week day_of_year dow doy
  format_datetime from_iso8601_date from_iso8601_timestamp from_unixtime hour last_day_of_month minute month
  parse_datetime quarter second to_iso8601 to_milliseconds to_unixtime week week_of_year with_timezone year
  year_of_week at_timezone human_readable_seconds
  array_distinct array_except array_intersect array_join array_max array_min array_position array_remove array_sort
  array_union arrays_overlap cardinality contains element_at filter flatten reduce repeat sequence shuffle slice
  transform zip zip_with map map_concat map_entries map_filter map_from_entries map_keys map_values transform_keys
  transform_values json_array_contains json_array_get json_array_length json_extract json_extract_scalar json_format
  json_parse json_size json_query json_value json_exists format current_user current_catalog current_schema
  `.trim().split(/\s+/)
]
