import { dialectFromString, init as loadSqlparser, Parser, parseWithComments } from "@guanmingchiu/sqlparser-ts"
import { Effect, Either, Predicate } from "effect"
import { loadModule as loadPgQuery, parseSync as parsePostgres } from "libpg-query"
import type { DbType } from "../../domain/Connection"
import { type Analysis, Findings, Refusal } from "./Analysis"
import { DIALECTS, type DialectProfile, type FunctionAllowance } from "./Dialects"
import { pivotStandIn } from "./DuckdbPivot"
import { blankComments, expandExecutableComments, plainStrings, readsAlike, unicodeSpaceInCode } from "./Lexer"
import { lexicalGuard } from "./LexicalGuard"
import { parseTextOf, sequencesRead } from "./ParseText"
import { walkPostgres } from "./PostgresWalk"
import { walkSqlparser } from "./SqlparserWalk"

/** A statement that passed: the text that runs (MySQL executable comments opened up) and what it reads. */
export interface CheckedStatement {
  readonly sql: string
  readonly profile: DialectProfile
  readonly analysis: Analysis
  /** The root of the parse tree, for column lineage: libpg_query's statement or sqlparser-rs's; none where a stand-in was parsed. */
  readonly tree: { readonly grammar: "postgres" | "sqlparser"; readonly root: unknown } | { readonly grammar: "none"; readonly why: string }
}

/** Where the parser stopped, as libpg_query (a character offset) or sqlparser-rs (a line and column) says it. */
const parsePosition = (error: unknown, message: string) => {
  const offset = Predicate.hasProperty(error, "sqlDetails") && Predicate.hasProperty(error.sqlDetails, "cursorPosition") ? error.sqlDetails.cursorPosition : undefined
  if (typeof offset === "number") return ` at character ${offset}`
  const at = /at Line: (\d+), Column: (\d+)/.exec(message)
  return at === null ? "" : ` at line ${at[1]}, column ${at[2]}`
}

// The parser's message quotes the text it stopped at, which can be a value: the audit log gets only where it stopped.
const parseError = (grammar: string, error: unknown) => {
  const message = error instanceof Error ? error.message : String(error)
  const refused = `the statement does not parse as ${grammar}`
  return new Refusal(`${refused}: ${message.replace(/^sql parser error: /, "").slice(0, 300)}`, `${refused}${parsePosition(error, message)}`)
}

// sqlparser-rs stops at 50 levels of nesting by default; real generated SQL nests deeper than that.
const SQLPARSER_RECURSION_LIMIT = 400
// Deeper parse trees are refused before the walks, whose recursion is bounded by the JavaScript stack.
export const MAX_TREE_DEPTH = 3_000

/** How deep a parse tree nests, counted without recursion. */
const treeDepth = (root: unknown): number => {
  let deepest = 0
  const stack: Array<[unknown, number]> = [[root, 1]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    if (depth > deepest) deepest = depth
    if (depth > MAX_TREE_DEPTH) break
    if (typeof node === "object" && node !== null) for (const child of Object.values(node)) if (typeof child === "object" && child !== null) stack.push([child, depth + 1])
  }
  return deepest
}

const parsers = new Map<string, Parser>()
/** One parser per sqlparser dialect, made on first use (after the WebAssembly module is loaded). */
const sqlparserFor = (dialect: string) => {
  let parser = parsers.get(dialect)
  if (parser === undefined) {
    parser = new Parser(dialectFromString(dialect)).withRecursionLimit(SQLPARSER_RECURSION_LIMIT)
    parsers.set(dialect, parser)
  }
  return parser
}

/**
 * The parse text has no comments left (they were blanked as the engine reads them): a comment the
 * parser still finds is text it skips and the engine may run (sqlparser-rs reads `--` before a
 * non-ASCII space, or Snowflake's `#`, as a comment), so the statement is refused.
 */
const commentsTheParserSees = (parseText: string, profile: DialectProfile): Refusal | undefined => {
  if (!/--|\/\*|#|\/\//.test(parseText)) return undefined
  const found = tryParse(() => parseWithComments(parseText, profile.sqlparser).comments)
  if (Either.isRight(found) && found.right.length === 0) return undefined
  return new Refusal("the guard's parser reads part of the statement as a comment that the database may run as code; write the statement without that comment mark outside strings")
}

/**
 * The statement parsed again with its strings' contents made plain (`plainStrings`): if the parser
 * read a string otherwise than the engine delimits it, code hid in it, and the plain text shows it
 * (another table, a function, a refusal). The same walk must find the same tables at the same
 * places and nothing it refuses.
 */
const stringsTheParserMisreads = (parseText: string, profile: DialectProfile, analysis: Analysis, allowedFunctions: FunctionAllowance): Refusal | undefined => {
  const plain = plainStrings(parseText, profile.lexical)
  if (plain === undefined) return undefined
  const misread = new Refusal("the guard's parser reads a string of the statement otherwise than the database delimits it; write the string without quote, escape or comment marks in it")
  const parsed = tryParse(() => sqlparserFor(profile.sqlparser).parse(plain) as Array<unknown>)
  if (Either.isLeft(parsed) || treeDepth(parsed.right) > MAX_TREE_DEPTH) return misread
  const findings = new Findings()
  const again = walkSqlparser(parsed.right, plain, profile, findings, allowedFunctions)
  if (findings.reason !== undefined) return new Refusal(findings.reason)
  const places = (a: Analysis) => a.tables.map((t) => t.at?.start ?? -1).sort((x, y) => x - y).join(",")
  return places(again) === places(analysis) ? undefined : misread
}

const tooDeep = () =>
  new Refusal(`the statement nests more than ${MAX_TREE_DEPTH} levels deep (subqueries, set operations, parentheses); split it into smaller statements`)

const tryParse = <A>(parse: () => A): Either.Either<A, unknown> => {
  try {
    return Either.right(parse())
  } catch (error) {
    return Either.left(error)
  }
}

/**
 * The read-only check at the SQL level. Fails closed: the dialect's grammar must parse exactly one
 * statement, the walk of the whole tree must find only reads, and the lexical guard must agree.
 */
const checkWith = (sql: string, dbType: DbType, allowedFunctions: FunctionAllowance): Either.Either<CheckedStatement, Refusal> => {
  const profile = DIALECTS[dbType]
  // MariaDB and SQLite end a statement at a NUL: the text after it would be checked and not run.
  if (sql.includes("\u0000")) return Either.left(new Refusal("the statement contains a NUL character"))
  // The walks read the text one way; the server must not be able to read it another.
  if (!readsAlike(sql, profile.lexical)) {
    return Either.left(
      new Refusal("the statement reads differently under the ways a server may read its comments and quotes (a comment or quote mark inside a comment or string, a comment inside a comment, a carriage return in a line comment); write it so that every reading agrees")
    )
  }
  const space = unicodeSpaceInCode(sql, profile.lexical)
  if (space !== undefined) {
    return Either.left(new Refusal(`the statement has a non-ASCII space (U+${sql.codePointAt(space)!.toString(16).toUpperCase().padStart(4, "0")}) outside a string or name, which engines and the guard read differently; use an ordinary space`))
  }
  const expanded = expandExecutableComments(sql, profile.lexical)
  if (expanded.conditional) {
    return Either.left(new Refusal("a versioned comment (/*!NNNNN … */, /*M! … */) runs or not by the server's version and kind; write what it holds as plain SQL, or leave it out"))
  }
  const text = expanded.text
  const pivot = pivotStandIn(text, profile)
  const standIn = pivot?.text ?? parseTextOf(text, profile)
  // libpg_query reads comments as PostgreSQL does; sqlparser-rs nests them where some servers do not.
  const parseText = profile.grammar === "sqlparser" ? blankComments(standIn, profile.lexical) : standIn
  const findings = new Findings()
  let analysis: Analysis
  let tree: CheckedStatement["tree"]
  if (profile.grammar === "postgres") {
    const parsed = tryParse(() => parsePostgres(parseText))
    if (Either.isLeft(parsed)) return Either.left(parseError("PostgreSQL", parsed.left))
    if (treeDepth(parsed.right) > MAX_TREE_DEPTH) return Either.left(tooDeep())
    analysis = walkPostgres(parsed.right, parseText, profile, findings, allowedFunctions)
    tree = { grammar: "postgres", root: parsed.right.stmts?.[0]?.stmt }
  } else {
    const parsed = tryParse(() => sqlparserFor(profile.sqlparser).parse(parseText) as Array<unknown>)
    if (Either.isLeft(parsed)) return Either.left(parseError(dbType, parsed.left))
    if (treeDepth(parsed.right) > MAX_TREE_DEPTH) return Either.left(tooDeep())
    const hidden = commentsTheParserSees(parseText, profile)
    if (hidden !== undefined) return Either.left(hidden)
    analysis = walkSqlparser(parsed.right, parseText, profile, findings, allowedFunctions)
    tree = { grammar: "sqlparser", root: parsed.right[0] }
    const misread = stringsTheParserMisreads(parseText, profile, analysis, allowedFunctions)
    if (misread !== undefined) return Either.left(misread)
    if (profile.postgresCrossCheck) {
      const postgres = tryParse(() => parsePostgres(parseText))
      if (Either.isRight(postgres) && treeDepth(postgres.right) <= MAX_TREE_DEPTH) walkPostgres(postgres.right, parseText, profile, findings, allowedFunctions)
    }
  }
  const sequences = sequencesRead(text, profile)
  if (sequences.length > 0) analysis = { ...analysis, tables: [...analysis.tables, ...sequences] }
  const lexical = lexicalGuard(text, profile)
  if (lexical !== undefined) findings.refuse(lexical)
  if (pivot !== undefined) {
    const tables = analysis.tables.map((t) => (t.at === undefined ? t : { ...t, at: { ...t.at, start: pivot.at(t.at.start), end: pivot.at(t.at.end) } }))
    analysis = { ...analysis, tables, limit: { kind: "fixed" } }
    tree = { grammar: "none", why: "a PIVOT statement" }
  }
  return findings.reason ? Either.left(new Refusal(findings.reason)) : Either.right({ sql: text, profile, analysis, tree })
}

// Verdicts are a pure function of (dialect, text): repeated statements skip the parsers.
const MEMO_ENTRIES = 500
const MEMO_MAX_SQL = 4_096

export class SqlGuard extends Effect.Service<SqlGuard>()("sluice/SqlGuard", {
  effect: Effect.gen(function* () {
    // Both grammars are WebAssembly modules, compiled once per process.
    yield* Effect.promise(() => Promise.all([loadPgQuery(), loadSqlparser()]))
    const memo = new Map<string, Either.Either<CheckedStatement, Refusal>>()

    /**
     * `allowedFunctions`: the connection's own additions to the dialect's allow-list; "any" only
     * for a statement that is analysed and never run (a view's definition, for its lineage).
     */
    const check = (sql: string, dbType: DbType, allowedFunctions: ReadonlyArray<string> | "any" = []): Either.Either<CheckedStatement, Refusal> => {
      const extra: FunctionAllowance = allowedFunctions === "any" ? "any" : new Set(allowedFunctions.map((f) => f.toLowerCase()))
      if (sql.length > MEMO_MAX_SQL) return checkWith(sql, dbType, extra)
      const key = `${dbType}\u0000${extra === "any" ? "*" : [...extra].join(",")}\u0000${sql}`
      const known = memo.get(key)
      if (known !== undefined) {
        memo.delete(key)
        memo.set(key, known)
        return known
      }
      const verdict = checkWith(sql, dbType, extra)
      memo.set(key, verdict)
      if (memo.size > MEMO_ENTRIES) memo.delete(memo.keys().next().value!)
      return verdict
    }

    return { check } as const
  })
}) {}
