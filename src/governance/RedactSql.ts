const DOLLAR_TAG = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/

/**
 * Replaces every string literal in SQL with '?', so audit rows keep the shape of a query without
 * its values. Identifiers ("…", `…`, […]) and comments are kept; an unterminated literal is
 * redacted to the end.
 */
export const redactSqlLiterals = (sql: string): string => {
  let out = ""
  let i = 0
  while (i < sql.length) {
    const ch = sql[i]!
    const next = sql[i + 1]
    if (ch === "-" && next === "-") {
      const end = sql.indexOf("\n", i)
      const stop = end === -1 ? sql.length : end
      out += sql.slice(i, stop)
      i = stop
    } else if (ch === "/" && next === "*") {
      const end = sql.indexOf("*/", i + 2)
      const stop = end === -1 ? sql.length : end + 2
      out += sql.slice(i, stop)
      i = stop
    } else if (ch === '"' || ch === "`" || ch === "[") {
      const close = ch === "[" ? "]" : ch
      const end = sql.indexOf(close, i + 1)
      const stop = end === -1 ? sql.length : end + 1
      out += sql.slice(i, stop)
      i = stop
    } else if (ch === "'") {
      const escapes = i > 0 && /[eE]/.test(sql[i - 1]!) && !/[A-Za-z0-9_]/.test(sql[i - 2] ?? "")
      let j = i + 1
      while (j < sql.length) {
        if (escapes && sql[j] === "\\") j += 2
        else if (sql[j] === "'" && sql[j + 1] === "'") j += 2
        else if (sql[j] === "'") break
        else j++
      }
      out += "'?'"
      i = j + 1
    } else if (ch === "$" && !/[A-Za-z0-9_]/.test(sql[i - 1] ?? "")) {
      const tag = DOLLAR_TAG.exec(sql.slice(i))
      if (tag === null) {
        out += ch
        i++
        continue
      }
      const end = sql.indexOf(tag[0], i + tag[0].length)
      out += "'?'"
      i = end === -1 ? sql.length : end + tag[0].length
    } else {
      out += ch
      i++
    }
  }
  return out
}
