/** How a dialect writes strings, identifiers and comments; the guard scans under every reading a server might use. */
export interface LexicalRules {
  /**
   * `\'` escapes a quote inside '…' (MySQL, BigQuery, Databricks, ClickHouse, Snowflake); "either"
   * where a server setting decides, so the guard reads the SQL both ways.
   */
  readonly backslashEscapes: boolean | "either"
  /** `E'…'` is a string with backslash escapes (PostgreSQL, DuckDB). */
  readonly escapeStrings: boolean | "either"
  /** `#` starts a line comment (MySQL, ClickHouse). */
  readonly hashComments: boolean
  /** `[…]` quotes an identifier (SQL Server, SQLite). */
  readonly bracketIdentifiers: boolean
  /** `$$…$$` and `$tag$…$tag$` quote a string (PostgreSQL, DuckDB, Snowflake). */
  readonly dollarQuotes: boolean
  /** `--` starts a comment only when followed by a space or control character (MySQL). */
  readonly dashCommentNeedsSpace: boolean
  /** Block comments nest (PostgreSQL, DuckDB); "either" where the guard does not know, so it reads both ways. */
  readonly nestedComments: boolean | "either"
  /** A carriage return ends a `--` or `#` comment, as a newline does (PostgreSQL, DuckDB; not SQLite, MySQL). */
  readonly carriageReturnEndsLine: boolean | "either"
  /** `"…"` is a string, with backslash escapes where the dialect has them (MySQL, BigQuery, Databricks), not a name. */
  readonly doubleQuotedStrings: boolean | "either"
  /** `/*!…*\/` and `/*M!…*\/` are code (MySQL, MariaDB); to every other engine they are comments. */
  readonly executableComments: boolean | "either"
}

/** Every way a server may read SQL under these rules: one per combination of the settings the guard does not know. */
export const readingsOf = (rules: LexicalRules): ReadonlyArray<LexicalRules> => {
  const ways = <K extends "backslashEscapes" | "escapeStrings" | "nestedComments" | "carriageReturnEndsLine" | "doubleQuotedStrings" | "executableComments">(list: ReadonlyArray<LexicalRules>, key: K) =>
    list.flatMap((r) => (r[key] === "either" ? [{ ...r, [key]: false }, { ...r, [key]: true }] : [r]))
  return ways(ways(ways(ways(ways(ways([rules], "backslashEscapes"), "escapeStrings"), "nestedComments"), "carriageReturnEndsLine"), "doubleQuotedStrings"), "executableComments")
}

export type TokenKind = "word" | "quoted" | "string" | "number" | "punct"

/** A significant token; whitespace and comments are skipped. Offsets index the SQL string. */
export interface Token {
  readonly kind: TokenKind
  readonly start: number
  readonly end: number
  /** Upper-cased for words; the character for punctuation. */
  readonly text: string
}

const WORD_START = /[A-Za-z_\p{L}]/u
const WORD_PART = /[A-Za-z0-9_$\p{L}\p{N}]/u
// PostgreSQL's scanner (and DuckDB's): a tag of letters (any non-ASCII character counts as one), digits and _, not led by a digit, of any length.
const DOLLAR_TAG = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y

/** Where `/*!…*\/` (MySQL) and `/*M!…*\/` (MariaDB) begin: the server runs their contents as code. */
export const EXECUTABLE_COMMENT = /\/\*M?!\d{0,6}/y

const endOfLine = (sql: string, from: number, carriageReturn = true) => {
  let i = from
  while (i < sql.length && sql[i] !== "\n" && (!carriageReturn || sql[i] !== "\r")) i++
  return i
}

/** Where a block comment opened at `from` ends; nested ones count where the rules say comments nest. */
const endOfComment = (sql: string, from: number, nested: boolean) => {
  if (!nested) {
    const end = sql.indexOf("*/", from + 2)
    return end === -1 ? sql.length : end + 2
  }
  let depth = 1
  let i = from + 2
  while (i < sql.length && depth > 0) {
    if (sql[i] === "/" && sql[i + 1] === "*") {
      depth++
      i += 2
    } else if (sql[i] === "*" && sql[i + 1] === "/") {
      depth--
      i += 2
    } else i++
  }
  return i
}

// The white space every engine reads as such; any other character is code, never skipped.
const SPACE = /[ \t\n\r\f\v]/

const closeQuote = (sql: string, from: number, quote: string, backslash: boolean) => {
  let i = from
  while (i < sql.length) {
    const ch = sql[i]
    if (backslash && ch === "\\") i += 2
    else if (ch === quote && sql[i + 1] === quote) i += 2
    else if (ch === quote) return i + 1
    else i++
  }
  return sql.length
}

// MySQL 5.7 and later run /*!NNNNN below 50700 as MariaDB 10 and later do; from 50700 on they part ways (MariaDB skips 50700 to 99999), and /*M! is MariaDB's alone.
const conditionalComment = (opener: string) => opener.includes("M") || Number(opener.replace(/\D/g, "") || "0") >= 50_700

/** Where an executable comment opens or closes, and whether the server runs its opening one only by its version (or only on MariaDB). */
export interface ExecutableMarker {
  readonly start: number
  readonly end: number
  readonly conditional: boolean
}

/**
 * Splits SQL into significant tokens under one reading of the rules (a setting left "either" is read
 * one way here; `readingsOf` gives every way). Executable comments, where the rules have them, are
 * read as code (their markers go to `markers`), and an unterminated string or comment runs to the end.
 */
export const tokenize = (sql: string, rules: LexicalRules, markers?: Array<ExecutableMarker>): Array<Token> => {
  const backslash = rules.backslashEscapes === true
  const carriageReturn = rules.carriageReturnEndsLine !== false
  const tokens: Array<Token> = []
  let openExecutable = 0
  let i = 0
  while (i < sql.length) {
    const ch = sql[i]!
    const next = sql[i + 1]
    if (SPACE.test(ch)) {
      i++
    } else if (ch === "-" && next === "-" && (!rules.dashCommentNeedsSpace || i + 2 >= sql.length || /[ \t\n\r\f\v\x00-\x1f]/.test(sql[i + 2]!))) {
      i = endOfLine(sql, i, carriageReturn)
    } else if (ch === "#" && rules.hashComments) {
      i = endOfLine(sql, i, carriageReturn)
    } else if (ch === "/" && next === "*") {
      EXECUTABLE_COMMENT.lastIndex = i
      const executable = rules.executableComments === true ? EXECUTABLE_COMMENT.exec(sql) : null
      if (executable) {
        openExecutable++
        markers?.push({ start: i, end: i + executable[0].length, conditional: conditionalComment(executable[0]) })
        i += executable[0].length
      } else {
        i = endOfComment(sql, i, rules.nestedComments === true)
      }
    } else if (ch === "*" && next === "/" && openExecutable > 0) {
      openExecutable--
      markers?.push({ start: i, end: i + 2, conditional: false })
      i += 2
    } else if (ch === "'") {
      const end = closeQuote(sql, i + 1, "'", backslash)
      tokens.push({ kind: "string", start: i, end, text: "'" })
      i = end
    } else if (ch === '"' && rules.doubleQuotedStrings === true) {
      const end = closeQuote(sql, i + 1, ch, backslash)
      tokens.push({ kind: "string", start: i, end, text: ch })
      i = end
    } else if (ch === '"' || ch === "`") {
      const end = closeQuote(sql, i + 1, ch, false)
      tokens.push({ kind: "quoted", start: i, end, text: ch })
      i = end
    } else if (ch === "[" && rules.bracketIdentifiers) {
      const end = closeQuote(sql, i + 1, "]", false)
      tokens.push({ kind: "quoted", start: i, end, text: "[" })
      i = end
    } else if (ch === "$" && rules.dollarQuotes && ((DOLLAR_TAG.lastIndex = i), DOLLAR_TAG.test(sql))) {
      const tag = sql.slice(i, DOLLAR_TAG.lastIndex)
      const close = sql.indexOf(tag, i + tag.length)
      const end = close === -1 ? sql.length : close + tag.length
      tokens.push({ kind: "string", start: i, end, text: "$" })
      i = end
    } else if (rules.escapeStrings === true && (ch === "E" || ch === "e") && next === "'") {
      const end = closeQuote(sql, i + 2, "'", true)
      tokens.push({ kind: "string", start: i, end, text: "'" })
      i = end
    } else if (WORD_START.test(ch)) {
      let j = i + 1
      while (j < sql.length && WORD_PART.test(sql[j]!)) j++
      tokens.push({ kind: "word", start: i, end: j, text: sql.slice(i, j).toUpperCase() })
      i = j
    } else if (/[0-9]/.test(ch)) {
      let j = i + 1
      while (j < sql.length && /[0-9.eE_xXa-fA-F]/.test(sql[j]!)) j++
      tokens.push({ kind: "number", start: i, end: j, text: sql.slice(i, j) })
      i = j
    } else {
      tokens.push({ kind: "punct", start: i, end: i + 1, text: ch })
      i++
    }
  }
  return tokens
}

/**
 * MySQL runs the body of `/*! … *\/` as code. Blanking the opener and its closer (same length, so
 * offsets hold) lets the parser see what the server will run, and that text is what runs. The
 * markers are found by `tokenize` itself, so the two never read the text apart. `conditional`:
 * a comment that MySQL and MariaDB servers run or skip by their kind and version (`/*!NNNNN` from
 * 50700 on, `/*M!`), which the guard cannot tell.
 */
export const expandExecutableComments = (sql: string, rules: LexicalRules): { readonly text: string; readonly conditional: boolean } => {
  if (!sql.includes("/*")) return { text: sql, conditional: false }
  const markers: Array<ExecutableMarker> = []
  tokenize(sql, rules, markers)
  if (markers.length === 0) return { text: sql, conditional: false }
  const chars = sql.split("")
  for (const marker of markers) chars.fill(" ", marker.start, marker.end)
  return { text: chars.join(""), conditional: markers.some((marker) => marker.conditional) }
}

/**
 * The statement with its comments blanked (same length), read as `tokenize` reads them: block
 * comments do not nest. A grammar whose own lexer reads comments otherwise (sqlparser-rs nests
 * them, Trino does not) then parses the code a server runs, not less.
 */
export const blankComments = (sql: string, rules: LexicalRules): string => {
  if (!/--|\/\*|#/.test(sql)) return sql
  let text = ""
  let at = 0
  for (const token of tokenize(sql, rules)) {
    text += sql.slice(at, token.start).replace(/[^\s]/g, " ") + sql.slice(token.start, token.end)
    at = token.end
  }
  return text + sql.slice(at).replace(/[^\s]/g, " ")
}

/**
 * Where a possibly qualified name that starts at `start` ends, and where its last part starts:
 * name parts (words, quoted names, PostgreSQL's `U&"…"` with its UESCAPE) joined by dots, as
 * tokenized. Undefined when no name starts there.
 */
export const nameEndAt = (tokens: ReadonlyArray<Token>, start: number): { readonly end: number; readonly last: number } | undefined => {
  let i = tokens.findIndex((t) => t.start === start)
  if (i < 0) return undefined
  /** The index after a name part starting at token j, or -1. */
  const part = (j: number) => {
    const t = tokens[j]
    if (t === undefined) return -1
    if (t.kind === "word" && t.text === "U" && tokens[j + 1]?.text === "&" && tokens[j + 2]?.kind === "quoted" && tokens[j + 1]!.start === t.end && tokens[j + 2]!.start === tokens[j + 1]!.end) {
      return tokens[j + 3]?.text === "UESCAPE" && tokens[j + 4]?.kind === "string" ? j + 5 : j + 3
    }
    return t.kind === "word" || t.kind === "quoted" ? j + 1 : -1
  }
  let next = part(i)
  if (next < 0) return undefined
  while (tokens[next]?.text === "." && part(next + 1) > 0) {
    i = next + 1
    next = part(i)
  }
  return { end: tokens[next - 1]!.end, last: tokens[i]!.start }
}

/**
 * What each character of the statement is under one reading: code (`c`, white space included),
 * inside a string or quoted name (`s`), or inside a comment (`m`).
 */
const classesOf = (sql: string, rules: LexicalRules) => {
  const classes = new Array<string>(sql.length).fill("m")
  for (const token of tokenize(sql, rules)) {
    classes.fill(token.kind === "string" || token.kind === "quoted" ? "s" : "c", token.start, token.end)
    // The E of E'…' is code under every reading: as the string's prefix, or as a name before a string.
    if (token.kind === "string" && /[Ee]/.test(sql[token.start]!) && sql[token.start + 1] === "'") classes[token.start] = "c"
  }
  for (let i = 0; i < sql.length; i++) if (classes[i] === "m" && SPACE.test(sql[i]!)) classes[i] = "c"
  return classes.join("")
}

/**
 * Whether every way a server may read the statement (`readingsOf`) agrees on what is code, what is
 * a string or name and what is a comment. Where they disagree (a quote or comment mark inside a
 * string or comment, a comment in a comment, a carriage return in a line comment), the text the
 * guard checks could be another statement than the one the server runs.
 */
export const readsAlike = (sql: string, rules: LexicalRules) => {
  const readings = readingsOf(rules)
  if (readings.length === 1) return true
  const first = classesOf(sql, readings[0]!)
  return readings.slice(1).every((reading) => classesOf(sql, reading) === first)
}

// White space other than ASCII's: engines and the guard's parser do not agree on which is which (MariaDB reads --U+00A0 as code, sqlparser-rs as a comment).
const UNICODE_SPACE = /[\u0085\u00a0\u1680\u180e\u2000-\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff]/g

/** Where a non-ASCII space stands in code (not inside a string, name or comment), under one reading. */
export const unicodeSpaceInCode = (sql: string, rules: LexicalRules): number | undefined => {
  if (!/[^\x00-\x7f]/.test(sql)) return undefined
  const classes = classesOf(sql, rules)
  for (const match of sql.matchAll(UNICODE_SPACE)) if (classes[match.index] === "c") return match.index
  return undefined
}

// What a parser's tokenizer reads specially inside a string: delimiters, escapes and comment marks (a date's lone - is not one).
const DELICATE = /--|\/\*|\*\/|\/\/|['"`\\#$[\];]/g

/**
 * The text with every string's content made plain (its delicate characters replaced by x, same
 * length), as the engine delimits strings; undefined when no string holds such a character. A
 * parser that reads the plain text to other tables, functions or statements than the text itself
 * read a string otherwise than the engine does.
 */
export const plainStrings = (sql: string, rules: LexicalRules): string | undefined => {
  let text = ""
  let at = 0
  for (const token of tokenize(sql, rules)) {
    if (token.kind !== "string") continue
    DOLLAR_TAG.lastIndex = token.start
    const tag = sql[token.start] === "$" && DOLLAR_TAG.test(sql) ? DOLLAR_TAG.lastIndex - token.start : 0
    const open = tag > 0 ? tag : /[Ee]/.test(sql[token.start]!) && sql[token.start + 1] === "'" ? 2 : 1
    const delimiter = tag > 0 ? sql.slice(token.start, token.start + tag) : sql[token.start + open - 1]!
    const close = token.end - token.start >= open + delimiter.length && sql.slice(token.end - delimiter.length, token.end) === delimiter ? delimiter.length : 0
    const content = sql.slice(token.start + open, token.end - close)
    const plain = content.replace(DELICATE, (mark) => "x".repeat(mark.length))
    if (plain === content) continue
    text += sql.slice(at, token.start + open) + plain
    at = token.end - close
  }
  return at === 0 ? undefined : text + sql.slice(at)
}
