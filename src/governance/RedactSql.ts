import { DB_TYPES, type DbType } from "../domain/Connection"
import { DIALECTS } from "./sqlguard/Dialects"
import { type LexicalRules, tokenize } from "./sqlguard/Lexer"

// MySQL/MariaDB (unless ANSI_QUOTES), BigQuery and Databricks read "…" as a string; SQLite does when no column has that name.
const DOUBLE_QUOTED_STRINGS: ReadonlySet<DbType> = new Set(["mysql", "bigquery", "databricks", "sqlite"])
// Each "…" string re-reads the rest of the statement; past this many, the rest is redacted whole.
const MAX_REREADS = 64

interface Reading {
  readonly rules: LexicalRules
  readonly doubleQuotedStrings: boolean
}

/** How a server may read the dialect's SQL: two ways where a server setting decides backslash escapes. */
const readingsOf = (dbType: DbType): ReadonlyArray<Reading> => {
  const rules = DIALECTS[dbType].lexical
  const doubleQuotedStrings = DOUBLE_QUOTED_STRINGS.has(dbType)
  return rules.backslashEscapes === "either"
    ? [true, false].map((backslashEscapes) => ({ rules: { ...rules, backslashEscapes }, doubleQuotedStrings }))
    : [{ rules, doubleQuotedStrings }]
}

/** Where a "…" string that honours backslash escapes ends (the lexer reads "…" as an identifier, without them). */
const endOfDoubleQuoted = (sql: string, from: number) => {
  let i = from + 1
  while (i < sql.length) {
    if (sql[i] === "\\") i += 2
    else if (sql[i] === '"' && sql[i + 1] === '"') i += 2
    else if (sql[i] === '"') return i + 1
    else i++
  }
  return sql.length
}

type Span = readonly [start: number, end: number, kind: "literal" | "comment"]

/** Comments in the text between two tokens: from its first to its last character that is not white space. */
const commentIn = (sql: string, from: number, to: number): Array<Span> => {
  const gap = sql.slice(from, to)
  const first = gap.search(/\S/)
  if (first < 0) return []
  const last = gap.length - gap.trimEnd().length
  return [[from + first, to - last, "comment"]]
}

/** The [start, end) ranges of every string literal and comment under one reading. */
const literalSpans = (sql: string, reading: Reading): Array<Span> => {
  const spans: Array<Span> = []
  let offset = 0
  let rereads = 0
  let after = 0
  scan: while (offset < sql.length) {
    for (const token of tokenize(sql.slice(offset), reading.rules)) {
      const start = offset + token.start
      spans.push(...commentIn(sql, after, start))
      after = offset + token.end
      if (token.kind === "string") spans.push([start, offset + token.end, "literal"])
      else if (token.kind === "quoted" && token.text === '"' && reading.doubleQuotedStrings) {
        const end = endOfDoubleQuoted(sql, start)
        spans.push([start, end, "literal"])
        if (end === offset + token.end) continue
        if (++rereads > MAX_REREADS) {
          spans.push([end, sql.length, "literal"])
          return spans
        }
        offset = end
        after = end
        continue scan
      }
    }
    break
  }
  return [...spans, ...commentIn(sql, after, sql.length)]
}

/**
 * Replaces every string literal in SQL with '?' and every comment with /* ? *\/, as the dialect's
 * lexical rules read them, so audit rows keep the shape of a query without its values (a comment
 * can hold them as well as a literal). Identifiers are kept; an unterminated literal is redacted to
 * the end. Where a setting decides (Redshift's backslashes) both readings are redacted; with no
 * dialect known, every dialect's.
 */
export const redactSqlLiterals = (sql: string, dbType: DbType | null): string => {
  const readings = (dbType === null ? DB_TYPES : [dbType]).flatMap(readingsOf)
  const spans = readings.flatMap((reading) => literalSpans(sql, reading)).sort((a, b) => a[0] - b[0])
  let out = ""
  let at = 0
  for (const [start, end, kind] of spans) {
    if (end <= at) continue
    if (start >= at) {
      // A prefix letter (E'…', N'…') is kept; the literal itself is not.
      const prefix = kind === "literal" && /[A-Za-z]/.test(sql[start]!) ? sql[start]! : ""
      out += `${sql.slice(at, start)}${kind === "comment" ? "/* ? */" : `${prefix}'?'`}`
    }
    at = Math.max(at, end)
  }
  return out + sql.slice(at)
}
