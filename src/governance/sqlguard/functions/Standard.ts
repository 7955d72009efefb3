/**
 * Functions nearly every SQL engine has and that only compute from their arguments: the base of
 * each dialect's reviewed allow-list. A name is allowed only where the dialect's list has it.
 */
export const STANDARD_FUNCTIONS = [
  // aggregates
  "count", "sum", "avg", "min", "max", "stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp",
  "corr", "covar_pop", "covar_samp", "regr_slope", "regr_intercept", "regr_count", "regr_r2", "regr_avgx", "regr_avgy",
  "regr_sxx", "regr_syy", "regr_sxy", "percentile_cont", "percentile_disc", "grouping",
  // window
  "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value",
  // conditional
  "coalesce", "nullif", "greatest", "least",
  // numbers
  "abs", "ceil", "ceiling", "floor", "round", "trunc", "mod", "power", "sqrt", "exp", "ln", "log", "log10", "sign", "pi",
  "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "degrees", "radians", "random", "width_bucket",
  // strings
  "lower", "upper", "length", "char_length", "character_length", "octet_length", "substring", "substr", "trim", "ltrim",
  "rtrim", "replace", "concat", "concat_ws", "lpad", "rpad", "left", "right", "reverse", "repeat", "position", "strpos",
  "split_part", "initcap", "ascii", "chr", "md5", "regexp_replace", "translate", "starts_with",
  // dates
  "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp", "now", "extract", "date_part", "date_trunc", "to_char", "to_date", "to_timestamp",
  // casts written as calls
  "cast", "try_cast"
] as const
