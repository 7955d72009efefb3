import type { DbType } from "../../domain/Connection"
import { Findings } from "./Analysis"
import type { DialectProfile } from "./Dialects"
import { readingsOf, type Token, tokenize } from "./Lexer"

// PIVOT: DuckDB's pivot statement (the other grammars do not parse one).
const FIRST_WORDS = new Set(["SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "SHOW", "DESCRIBE", "DESC", "FROM", "PIVOT"])

/** Words no read has outside a quoted name; a column with such a name must be quoted. */
const DENIED_WORDS = new Set([
  "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "CREATE", "DROP", "ALTER", "TRUNCATE", "GRANT",
  "REVOKE", "COPY", "VACUUM", "REINDEX", "INTO", "OUTFILE", "DUMPFILE", "ATTACH", "DETACH", "PRAGMA", "EXEC",
  "EXECUTE", "CALL", "RENAME", "UNLOAD", "INSTALL", "NEXTVAL", "SETVAL"
])

/** T-SQL runs consecutive statements without a semicolon, so its statement keywords are refused anywhere. */
const EXTRA_DENIED: Partial<Record<DbType, ReadonlySet<string>>> = {
  mssql: new Set([
    "SET", "DECLARE", "PRINT", "RAISERROR", "USE", "KILL", "DBCC", "BACKUP", "RESTORE", "BULK", "WAITFOR", "WHILE",
    "GOTO", "THROW", "REVERT", "DEALLOCATE", "READTEXT", "WRITETEXT", "UPDATETEXT", "SHUTDOWN", "CHECKPOINT",
    "RECONFIGURE", "DENY", "BEGIN", "COMMIT", "ROLLBACK", "SAVE", "IF", "OPEN", "CLOSE", "RETURN"
  ])
}

const word = (token: Token | undefined, ...texts: Array<string>) => token?.kind === "word" && texts.includes(token.text)

// Values are named by their kind, never quoted: the reason reaches the audit log.
const startName = (token: Token) =>
  token.kind === "word" ? token.text : token.kind === "punct" ? `'${token.text}'` : token.kind === "string" ? "a string" : token.kind === "number" ? "a number" : "a quoted name"

const scan = (tokens: ReadonlyArray<Token>, profile: DialectProfile, findings: Findings) => {
  const first = tokens[0]
  if (first === undefined) return findings.refuse("the statement is empty")
  if (!(first.kind === "punct" && first.text === "(") && !(first.kind === "word" && FIRST_WORDS.has(first.text))) {
    findings.refuse(`a statement starting with ${startName(first)} is not a read`)
  }
  const extra = EXTRA_DENIED[profile.dbType]
  const lastCode = tokens.findLastIndex((t) => t.text !== ";")
  tokens.forEach((token, i) => {
    if (token.kind === "punct" && token.text === ";" && i < lastCode) findings.refuse("more than one statement")
    if (token.kind !== "word") return
    // A name after a dot is a column or table, never a keyword; but seq.nextval advances a sequence.
    if (tokens[i - 1]?.text === "." && token.text !== "NEXTVAL") return
    if (DENIED_WORDS.has(token.text) || extra?.has(token.text)) findings.refuse(`the keyword ${token.text} is not allowed in a read`)
    if (token.text === "SHARE" && word(tokens[i - 1], "FOR", "KEY", "IN")) findings.refuse("a locking clause (FOR SHARE / LOCK IN SHARE MODE)")
    if (token.text === "LOCK" && word(tokens[i + 1], "IN")) findings.refuse("a locking clause (LOCK IN SHARE MODE)")
    if (token.text === "NEXT" && word(tokens[i + 1], "VALUE") && word(tokens[i + 2], "FOR")) findings.refuse("NEXT VALUE FOR advances a sequence")
  })
}

/**
 * A conservative second opinion that must agree with the parser: it refuses statement words outside
 * quotes, stacking and locking clauses, under every way a server may read the statement.
 */
export const lexicalGuard = (sql: string, profile: DialectProfile): string | undefined => {
  const findings = new Findings()
  for (const reading of readingsOf(profile.lexical)) scan(tokenize(sql, reading), profile, findings)
  return findings.reason
}
