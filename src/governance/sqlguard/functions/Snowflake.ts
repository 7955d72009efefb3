import { STANDARD_FUNCTIONS } from "./Standard"

/**
 * Snowflake functions reviewed as pure reads. Never: SYSTEM$ functions, RESULT_SCAN (another statement's raw result), INFER_SCHEMA and stage readers, external functions, sequences.
 * No server of this kind runs here: reviewed from the vendor's function reference. A function
 * missing here is refused by name; a connection's allowed_functions adds it.
 */
export const SNOWFLAKE_FUNCTIONS: ReadonlyArray<string> = [
  ...STANDARD_FUNCTIONS,
  ...`
  listagg array_agg arrayagg object_agg median mode approx_count_distinct hll approx_percentile approx_top_k
  any_value booland_agg boolor_agg count_if max_by min_by kurtosis skew ratio_to_report conditional_true_event
  iff ifnull nvl nvl2 zeroifnull nullifzero decode equal_null
  div0 div0null square cbrt factorial uniform normal randstr seq4 seq8 hash
  charindex contains endswith startswith editdistance insert len regexp regexp_count regexp_instr regexp_like
  regexp_substr regexp_substr_all rlike split split_to_table strtok strtok_to_array space collate collation
  base64_encode base64_decode_string hex_encode hex_decode_string sha1 sha2 md5_hex
  add_months current_date current_time current_timestamp dateadd datediff date_from_parts dayname dayofweek
  dayofyear hour last_day minute month monthname months_between next_day previous_day quarter second sysdate
  time_slice timeadd timediff timestamp_from_parts timestampadd timestampdiff to_time to_timestamp_ltz
  to_timestamp_ntz to_timestamp_tz week weekofyear year yearofweek convert_timezone
  parse_json try_parse_json to_variant to_object to_array array_construct array_contains array_size array_slice
  array_to_string object_construct object_keys get get_path flatten typeof is_null_value as_varchar as_number
  to_varchar to_number to_decimal to_double to_boolean to_binary try_to_number try_to_date try_to_timestamp
  try_to_boolean try_to_decimal try_to_double generator current_user current_role current_database current_schema
  current_warehouse current_region current_account
  `.trim().split(/\s+/)
]
