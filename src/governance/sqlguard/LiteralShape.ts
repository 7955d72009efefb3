const isDigit = (c: number) => c >= 48 && c <= 57
// What can stand in an identifier or keyword next to a literal: a letter, digit, _ or $.
const isWordChar = (c: number) => isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36
// An integer of at most this many digits is always an int4 constant to PostgreSQL's lexer (longer ones may be numeric).
const MAX_DIGITS = 9

/** The index just past a quoted run starting at `from` (a doubled quote stays inside it), or -1 when it does not end. */
const quotedEnd = (sql: string, from: number, quote: "'" | '"') => {
  for (let at = from + 1; ; ) {
    const closing = sql.indexOf(quote, at)
    if (closing < 0) return -1
    if (sql[closing + 1] !== quote) return closing + 1
    at = closing + 2
  }
}

/**
 * The text of one or more SQL statements with every plain string constant ('…') and small unsigned
 * integer constant replaced by a placeholder, for a statement that PostgreSQL's lexer reads into
 * the same tokens whatever those constants hold (with standard_conforming_strings on, as the dbt
 * proxy's sessions are pinned): two texts of one shape parse into the same tree but for those
 * constants' values. Null for any text where that is not certain from the characters alone, so the
 * caller parses it instead: no constant at all, comments, dollar quotes or parameters ($),
 * backslashes, prefixed strings (E'', B'', X'', N'', U&''), numbers with a point, exponent, radix,
 * underscore or more than nine digits, control characters, and anything outside ASCII except inside
 * a quoted string or identifier.
 */
export const literalShape = (sql: string): string | null => {
  if (sql.includes("\0")) return null
  let shape = ""
  let verbatimFrom = 0
  let constants = 0
  for (let at = 0; at < sql.length; ) {
    const c = sql.charCodeAt(at)
    const before = at === 0 ? 32 : sql.charCodeAt(at - 1)
    if (c === 39 /* ' */ || c === 34 /* " */) {
      // A quote right after a word character or & starts a prefixed string (E'…', U&'…') or is no plain constant.
      if (isWordChar(before) || before === 38 /* & */) return null
      const end = quotedEnd(sql, at, c === 39 ? "'" : '"')
      if (end < 0) return null
      if (c === 39) {
        shape += `${sql.slice(verbatimFrom, at)}'?'`
        verbatimFrom = end
        constants++
      }
      at = end
      continue
    }
    if (isDigit(c)) {
      // A digit inside a word (t1, col_2) is part of an identifier.
      if (isWordChar(before)) {
        at++
        continue
      }
      if (before === 46 /* . */) return null
      let end = at
      while (end < sql.length && isDigit(sql.charCodeAt(end))) end++
      const after = end < sql.length ? sql.charCodeAt(end) : 32
      if (end - at > MAX_DIGITS || isWordChar(after) || after === 46 || after === 39 || after === 34) return null
      shape += `${sql.slice(verbatimFrom, at)}0`
      verbatimFrom = end
      constants++
      at = end
      continue
    }
    if (c > 126 || c === 36 /* $ */ || c === 92 /* \ */) return null
    if (c < 32 && c !== 9 && c !== 10 && c !== 13) return null
    if ((c === 45 /* - */ && sql.charCodeAt(at + 1) === 45) || (c === 47 /* / */ && sql.charCodeAt(at + 1) === 42)) return null
    at++
  }
  return constants === 0 ? null : shape + sql.slice(verbatimFrom)
}
