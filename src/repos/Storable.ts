const NUL = /\u0000/g
// One scan finds the rare string that needs either replacement.
const NUL_OR_SURROGATE = /[\u0000\uD800-\uDFFF]/
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
const TRUNCATED = "…[truncated]"

/**
 * A value PostgreSQL stores as it is given, whatever a caller sent: text without NUL (text and jsonb
 * refuse it) or lone surrogates (not UTF-8; jsonb refuses their escapes), each string cut to
 * `maxChars`, numbers finite; objects and arrays throughout, for JSON columns.
 */
export const storable = (value: unknown, maxChars: number): unknown => {
  if (typeof value === "string") {
    const cut = value.length > maxChars ? `${value.slice(0, Math.max(0, maxChars - TRUNCATED.length))}${TRUNCATED}` : value
    return NUL_OR_SURROGATE.test(cut) ? cut.replace(NUL, "\uFFFD").replace(LONE_SURROGATE, "\uFFFD") : cut
  }
  if (typeof value === "number") return Number.isFinite(value) ? value : null
  if (typeof value === "bigint") return value.toString()
  if (value === null || typeof value !== "object") return value === undefined ? null : value
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) return value.map((item) => storable(item, maxChars))
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [storable(key, maxChars), storable(item, maxChars)]))
}
