import { STANDARD_FUNCTIONS } from "./Standard"

/**
 * SQL Server functions reviewed as pure reads. Never: the xp_ and sp_
 * procedures, OPENROWSET, OPENQUERY, OPENDATASOURCE, OPENXML, and the functions that read sessions.
 * No server of this kind runs here: reviewed from the vendor's function reference. A function
 * missing here is refused by name; a connection's allowed_functions adds it.
 */
export const MSSQL_FUNCTIONS: ReadonlyArray<string> = [
  ...STANDARD_FUNCTIONS,
  ...`
  count_big string_agg stdev stdevp var varp checksum_agg approx_count_distinct approx_percentile_cont approx_percentile_disc
  iif choose isnull isnumeric isdate isjson
  rand square log exp ceiling
  charindex patindex len datalength left right ltrim rtrim replicate reverse space str stuff format quotename
  soundex difference char nchar unicode concat_ws string_split translate trim string_escape
  getdate getutcdate sysdatetime sysutcdatetime sysdatetimeoffset current_timestamp dateadd datediff datediff_big
  datename datepart datefromparts datetimefromparts datetime2fromparts timefromparts eomonth day month year
  switchoffset todatetimeoffset date_bucket datetrunc
  json_value json_query json_modify openjson json_object json_array
  convert try_convert parse try_parse newid db_name schema_name object_name object_id user_name suser_name suser_sname
  `.trim().split(/\s+/)
]
