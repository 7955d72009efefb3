import type { DialectProfile } from "./Dialects"
import { tokenize } from "./Lexer"

/**
 * Constructs the grammars do not know, rewritten for parsing only and to the same length, so every
 * offset the walk reports (the row cap's LIMIT) still indexes the statement that runs. Each
 * stand-in has the same shape for the guard: SQLite's `a GLOB b` is a comparison like `a LIKE b`;
 * DuckDB's ASOF JOIN is a join; MariaDB's `PREVIOUS VALUE FOR s` reads s as a value, and its
 * `a SOUNDS LIKE b` compares like `a LIKE b`.
 */
export const parseTextOf = (sql: string, profile: DialectProfile): string => {
  const rewrites = REWRITES[profile.dbType]
  if (rewrites === undefined || !rewrites.hint.test(sql)) return sql
  const tokens = tokenize(sql, profile.lexical)
  let text = sql
  tokens.forEach((token, i) => {
    if (token.kind !== "word") return
    const replaced = rewrites.at(tokens, i)
    if (replaced === undefined) return
    const [end, stand] = replaced
    text = text.slice(0, token.start) + stand.padEnd(end - token.start) + text.slice(end)
  })
  return text
}

interface Rewrites {
  /** A cheap test of the text before tokenizing. */
  readonly hint: RegExp
  /** The end offset and stand-in text of a construct starting at token i, if one does. */
  readonly at: (tokens: ReturnType<typeof tokenize>, i: number) => readonly [number, string] | undefined
}

const REWRITES: Partial<Record<DialectProfile["dbType"], Rewrites>> = {
  sqlite: { hint: /glob/i, at: (tokens, i) => (tokens[i]!.text === "GLOB" ? [tokens[i]!.end, "LIKE"] : undefined) },
  duckdb: {
    hint: /asof/i,
    at: (tokens, i) => (tokens[i]!.text === "ASOF" && tokens[i + 1]?.kind === "word" && /^(JOIN|LEFT|INNER)$/.test(tokens[i + 1]!.text) ? [tokens[i]!.end, ""] : undefined)
  },
  mysql: {
    hint: /previous|sounds/i,
    at: (tokens, i) => {
      if (tokens[i]!.text === "PREVIOUS" && tokens[i + 1]?.text === "VALUE" && tokens[i + 2]?.text === "FOR") return [tokens[i + 2]!.end, ""]
      // `a SOUNDS LIKE b` compares like `a LIKE b`.
      if (tokens[i]!.text === "SOUNDS" && tokens[i + 1]?.text === "LIKE") return [tokens[i]!.end, ""]
      return undefined
    }
  }
}

/** The sequences MariaDB's `PREVIOUS VALUE FOR s` reads (its stand-in reads s as a value): relations for the table policy like any other. */
export const sequencesRead = (sql: string, profile: DialectProfile): Array<{ readonly parts: ReadonlyArray<string> }> => {
  if (profile.dbType !== "mysql" || !/previous/i.test(sql)) return []
  const tokens = tokenize(sql, profile.lexical)
  const unquoted = (text: string) => (text.startsWith("`") ? text.slice(1, -1).replaceAll("``", "`") : text)
  return tokens.flatMap((token, i) => {
    if (!(token.text === "PREVIOUS" && tokens[i + 1]?.text === "VALUE" && tokens[i + 2]?.text === "FOR")) return []
    const parts: Array<string> = []
    for (let j = i + 3; tokens[j]?.kind === "word" || tokens[j]?.kind === "quoted"; j += 2) {
      parts.push(unquoted(sql.slice(tokens[j]!.start, tokens[j]!.end)))
      if (tokens[j + 1]?.text !== ".") break
    }
    return [{ parts }]
  })
}
