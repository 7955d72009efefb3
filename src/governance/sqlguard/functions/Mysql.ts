import { STANDARD_FUNCTIONS } from "./Standard"

/**
 * MySQL and MariaDB functions reviewed as pure reads. Never: load_file, sleep, benchmark, locks
 * (get_lock…), replication waits (master_pos_wait, master_gtid_wait…), sequences (nextval,
 * lastval, setval), updatexml/extractvalue (their errors echo the value), sys_exec/sys_eval.
 */
export const MYSQL_FUNCTIONS: ReadonlyArray<string> = [
  ...STANDARD_FUNCTIONS,
  ...`
  group_concat json_arrayagg json_objectagg bit_and bit_or bit_xor std stddev median
  if ifnull isnull nvl nvl2 decode_oracle
  acos asin atan atan2 conv cot crc32 div format hex oct rand truncate unhex bin
  char char_length concat_ws elt export_set field find_in_set insert instr lcase locate make_set mid ord quote
  regexp_instr regexp_like regexp_substr soundex space strcmp substring_index ucase weight_string to_base64
  from_base64 sha sha1 sha2 compress uncompress uncompressed_length natural_sort_key sformat
  adddate addtime convert_tz curdate curtime date date_add date_format date_sub datediff day dayname dayofmonth
  dayofweek dayofyear from_days from_unixtime get_format hour last_day makedate maketime microsecond minute month
  monthname period_add period_diff quarter sec_to_time second str_to_date subdate subtime sysdate time time_format
  time_to_sec timediff timestamp timestampadd timestampdiff to_days to_seconds unix_timestamp utc_date utc_time
  utc_timestamp week weekday weekofyear year yearweek add_months months_between
  json_array json_array_append json_array_insert json_contains json_contains_path json_depth json_detailed
  json_equals json_exists json_extract json_insert json_keys json_length json_loose json_merge json_merge_patch
  json_merge_preserve json_normalize json_object json_overlaps json_pretty json_query json_quote json_remove
  json_replace json_search json_set json_table json_type json_unquote json_valid json_value json_compact json_schema_valid
  column_check column_exists column_get column_json column_list column_create column_add column_delete
  inet_aton inet_ntoa inet6_aton inet6_ntoa is_ipv4 is_ipv6 is_ipv4_compat is_ipv4_mapped uuid uuid_short sys_guid
  bit_count coercibility collation charset database schema user current_user session_user system_user version
  connection_id found_rows row_count last_insert_id current_role
  st_astext st_aswkt st_geomfromtext st_x st_y st_distance st_contains point
  `.trim().split(/\s+/)
]
