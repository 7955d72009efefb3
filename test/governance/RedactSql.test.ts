import { describe, expect, it } from "vitest"
import type { DbType } from "../../src/domain/Connection"
import { redactSqlLiterals } from "../../src/governance/RedactSql"

describe("redactSqlLiterals", () => {
  it.each<[DbType | null, string, string]>([
    ["postgresql", "select * from t where email = 'a@b.c'", "select * from t where email = '?'"],
    ["postgresql", "select 'it''s', 'x' from t", "select '?', '?' from t"],
    ["postgresql", "select E'a\\'b' as v", "select E'?' as v"],
    ["postgresql", "select $$secret$$, $tag$ x $ y $tag$", "select '?', '?'"],
    ["postgresql", 'select "col\'name" from "t"', 'select "col\'name" from "t"'],
    // A comment can hold values as well as a literal can.
    ["postgresql", "select 1 -- don't\nfrom t", "select ? /* ? */\nfrom t"],
    ["postgresql", "select /* it's */ 'v'", "select /* ? */ '?'"],
    ["postgresql", "select id from customers -- alice@example.com 123-45-6789", "select id from customers /* ? */"],
    ["mysql", "select id # ssn 123-45-6789\nfrom t", "select id /* ? */\nfrom t"],
    ["postgresql", "/* lead */ select 1 /* a */ /* b */", "/* ? */ select ? /* ? */"],
    ["mysql", "select `a'b` from t", "select `a'b` from t"],
    ["mssql", "select [x'y] from t", "select [x'y] from t"],
    ["postgresql", "select 'unterminated", "select '?'"],
    ["postgresql", "select $1, price$ from t", "select $1, price$ from t"],
    // MySQL and MariaDB read "…" as a string (unless ANSI_QUOTES), with backslash escapes.
    ["mysql", 'select * from users where email = "alice@example.com"', "select * from users where email = '?'"],
    ["mysql", 'select "say \\"hi\\" to bob@example.com", `id` from t', "select '?', `id` from t"],
    ["bigquery", 'select "alice@example.com" as e', "select '?' as e"],
    // Backslash-escaped quotes: the text after \' is still inside the literal.
    ["mysql", "select * from t where name = 'O\\'Brien 555-12-3456' and id = 1", "select * from t where name = '?' and id = ?"],
    ["mysql", "select 'a\\\\', 'secret' from t", "select '?', '?' from t"],
    // Redshift's setting decides: what either reading takes for a literal is redacted (here, to the end).
    ["redshift", "select 'x\\' as leak, 'y' from t", "select '?'"],
    ["redshift", "select 'a' as v, \"col\" from t", "select '?' as v, \"col\" from t"],
    // PostgreSQL keeps "…" identifiers and reads \' as the end of a standard string.
    ["postgresql", `select "email" from t where note = 'c:\\' and id = 2`, `select "email" from t where note = '?' and id = ?`],
    // A number can hold a value as well as a string (an SSN, a salary); a parameter's place is kept.
    ["postgresql", "select * from t where ssn = 123456789 and salary > 1.2e5 and x = $1", "select * from t where ssn = ? and salary > ? and x = $1"],
    // Whatever any reading takes for a comment is redacted: nested (PostgreSQL), or ended by a carriage return or not.
    ["postgresql", "select 1 /* outer /* inner */ Ada 123-45-6789 */ from t", "select ? /* ? */ from t"],
    ["sqlite", "select id -- \r Ada ssn 123-45-6789\n from t", "select id /* ? */\n from t"],
    ["mysql", "select id # \r Ada 4111111111111111\n from t", "select id /* ? */\n from t"],
    // A dollar-quoted string's tag is any run of letters (non-ASCII too), of any length.
    ["postgresql", "select name from t where name = $é$Ada Lovelace s123_45_6789$é$", "select name from t where name = '?'"],
    // What a versioned comment holds may have been skipped by the server as a comment: redacted as one.
    ["mysql", "select 1 /*!99999 Ada Lovelace ssn 123 */ from t", "select ? /* ? */ from t"],
    // Unknown dialect: every dialect's reading, double quotes included.
    [null, `select "alice@example.com", 'O\\'Brien secret' from t`, "select '?', '?'"]
  ])("%s: %s", (dialect, input, expected) => {
    expect(redactSqlLiterals(input, dialect)).toBe(expected)
  })

  it("a flood of double-quoted strings stays linear enough and leaks nothing", () => {
    const sql = `select ${Array.from({ length: 500 }, (_, i) => `"a\\"${i}secret"`).join(", ")}`
    const redacted = redactSqlLiterals(sql, "mysql")
    expect(redacted).not.toContain("secret")
  })
})
