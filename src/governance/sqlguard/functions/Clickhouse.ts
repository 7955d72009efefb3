import { STANDARD_FUNCTIONS } from "./Standard"

/**
 * ClickHouse functions reviewed as pure reads. Never: the table functions that reach files, URLs, other servers or databases (file, url, s3, remote, mysql, postgresql, jdbc, merge…), dictionaries, sleep, and the introspection and system functions.
 * No server of this kind runs here: reviewed from the vendor's function reference. A function
 * missing here is refused by name; a connection's allowed_functions adds it.
 */
export const CLICKHOUSE_FUNCTIONS: ReadonlyArray<string> = [
  ...STANDARD_FUNCTIONS,
  ...`
  uniq uniqexact uniqcombined uniqhll12 any anylast argmin argmax groupArray groupUniqArray groupArrayInsertAt
  topK quantile quantiles quantileExact quantileTiming median countIf sumIf avgIf minIf maxIf uniqIf sumMap
  count distinct if multiIf ifNull nullIf isNull isNotNull assumeNotNull toNullable
  plus minus multiply divide intDiv modulo negate gcd lcm exp2 exp10 log2 cbrt erf erfc lgamma tgamma rand rand64
  randCanonical generateUUIDv4 intExp2 intExp10 roundToExp2 roundDown roundBankers
  lengthUTF8 lowerUTF8 upperUTF8 reverseUTF8 substringUTF8 concatAssumeInjective empty notEmpty appendTrailingCharIfAbsent
  position positionCaseInsensitive positionUTF8 match extract extractAll like notLike ilike multiSearchAny
  replaceOne replaceAll replaceRegexpOne replaceRegexpAll splitByChar splitByString splitByRegexp arrayStringConcat
  startsWith endsWith trimLeft trimRight trimBoth base64Encode base64Decode hex unhex format leftPad rightPad
  toString toInt8 toInt16 toInt32 toInt64 toUInt8 toUInt16 toUInt32 toUInt64 toFloat32 toFloat64 toDecimal32
  toDecimal64 toDate toDateTime toDateTime64 toDateOrNull toDateTimeOrNull toInt64OrNull toFloat64OrNull toTypeName
  toYear toMonth toDayOfMonth toDayOfWeek toHour toMinute toSecond toStartOfDay toStartOfWeek toStartOfMonth
  toStartOfQuarter toStartOfYear toStartOfHour toStartOfMinute toStartOfInterval toYYYYMM toYYYYMMDD toUnixTimestamp
  today yesterday now64 dateDiff dateAdd dateSub addDays addHours addMonths addYears subtractDays formatDateTime
  parseDateTimeBestEffort parseDateTimeBestEffortOrNull timeSlot toRelativeDayNum
  array arrayJoin arrayMap arrayFilter arrayExists arrayAll arraySum arrayCount arraySort arrayReverse arrayDistinct
  arrayUniq arrayElement has hasAll hasAny indexOf length range arraySlice arrayConcat arrayZip arrayEnumerate
  tuple tupleElement map mapKeys mapValues mapContains
  JSONExtract JSONExtractString JSONExtractInt JSONExtractFloat JSONExtractBool JSONExtractRaw JSONExtractKeys
  JSONHas JSONLength JSONType isValidJSON visitParamExtractString
  cityHash64 sipHash64 xxHash64 murmurHash3_64 MD5 SHA1 SHA256 halfMD5
  columns numbers zeros generateRandom values version currentDatabase currentUser
  `.trim().split(/\s+/)
]
