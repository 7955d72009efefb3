import { DB_TYPES, type DbType } from "../domain/Connection"
import { DIALECTS } from "./sqlguard/Dialects"
import { type LexicalRules, readingsOf, tokenize } from "./sqlguard/Lexer"

// MySQL/MariaDB (unless ANSI_QUOTES), BigQuery and Databricks read "…" as a string; SQLite does when no column has that name.
const DOUBLE_QUOTED_STRINGS: ReadonlySet<DbType> = new Set(["mysql", "bigquery", "databricks", "sqlite"])

/**
 * Every way a server may read the dialect's SQL, for redaction: whatever any of them takes for a
 * literal or a comment is redacted (redacting more is the safe side), so comments are read nested
 * and flat and line comments to either line end, and "…" both ways where it can be a string.
 */
const readingsFor = (dbType: DbType) => {
  const rules = DIALECTS[dbType].lexical
  return readingsOf({
    ...rules,
    doubleQuotedStrings: DOUBLE_QUOTED_STRINGS.has(dbType) ? "either" : rules.doubleQuotedStrings,
    nestedComments: "either",
    carriageReturnEndsLine: "either",
    // A versioned comment the server skipped is a comment: its text is redacted as one.
    executableComments: rules.executableComments === true ? "either" : rules.executableComments
  })
}

type Span = readonly [start: number, end: number, kind: "literal" | "number" | "comment"]

/** Comments in the text between two tokens: from its first to its last character that is not white space. */
const commentIn = (sql: string, from: number, to: number): Array<Span> => {
  const gap = sql.slice(from, to)
  const first = gap.search(/\S/)
  if (first < 0) return []
  const last = gap.length - gap.trimEnd().length
  return [[from + first, to - last, "comment"]]
}

/** The [start, end) ranges of every literal (strings and numbers) and comment under one reading. */
const literalSpans = (sql: string, rules: LexicalRules): Array<Span> => {
  const spans: Array<Span> = []
  let after = 0
  for (const token of tokenize(sql, rules)) {
    spans.push(...commentIn(sql, after, token.start))
    after = token.end
    if (token.kind === "string") spans.push([token.start, token.end, "literal"])
    // $1 is a parameter's place, not a value.
    else if (token.kind === "number" && sql[token.start - 1] !== "$") spans.push([token.start, token.end, "number"])
  }
  return [...spans, ...commentIn(sql, after, sql.length)]
}

/**
 * Replaces every string literal in SQL with '?', every number with ?, and every comment with
 * /* ? *\/, as the dialect's lexical rules read them, so audit rows keep the shape of a query
 * without its values (a comment or a number can hold them as well as a string). Identifiers are
 * kept; an unterminated literal is redacted to the end. Where a setting decides (Redshift's
 * backslashes, comments' nesting) every reading is redacted; with no dialect known, every dialect's.
 */
export const redactSqlLiterals = (sql: string, dbType: DbType | null): string => {
  if (sql.length > MEMO_MAX_SQL) return redacted(sql, dbType)
  const key = `${dbType ?? ""}\u0000${sql}`
  let known = memo.get(key)
  if (known === undefined) {
    known = redacted(sql, dbType)
    if (memo.size >= MEMO_CAPACITY) memo.delete(memo.keys().next().value!)
    memo.set(key, known)
  }
  return known
}

// Every audit row of a statement redacts it again; the statements a gateway sees repeat (a tool's, a dashboard's), so short ones are remembered.
const MEMO_CAPACITY = 1_000
const MEMO_MAX_SQL = 4_096
const memo = new Map<string, string>()

const redacted = (sql: string, dbType: DbType | null): string => {
  const readings = (dbType === null ? DB_TYPES : [dbType]).flatMap(readingsFor)
  const spans = readings.flatMap((reading) => literalSpans(sql, reading)).sort((a, b) => a[0] - b[0])
  let out = ""
  let at = 0
  for (const [start, end, kind] of spans) {
    if (end <= at) continue
    if (start >= at) {
      // A prefix letter (E'…', N'…') is kept; the literal itself is not.
      const prefix = kind === "literal" && /[A-Za-z]/.test(sql[start]!) ? sql[start]! : ""
      out += `${sql.slice(at, start)}${kind === "comment" ? "/* ? */" : kind === "number" ? "?" : `${prefix}'?'`}`
    }
    at = Math.max(at, end)
  }
  return out + sql.slice(at)
}

/**
 * Redacted SQL (from the audit log) made parsable again for what it reads: each number's `?` put
 * back as 0 (strings and comments stayed well formed). Where `?` was an operator (PostgreSQL's
 * jsonb `?`) the statement no longer parses, and counts as such.
 */
export const parsableRedacted = (sql: string, dbType: DbType): string => {
  let out = ""
  let at = 0
  for (const token of tokenize(sql, DIALECTS[dbType].lexical)) {
    if (token.kind !== "punct" || token.text !== "?") continue
    out += `${sql.slice(at, token.start)}0`
    at = token.end
  }
  return out + sql.slice(at)
}
