import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import type { ConnectionInput } from "../../src/domain/Connection"
import type { PiiRule } from "../../src/domain/Pii"
import { maskResult } from "../../src/governance/PiiMasking"
import { SqlGuard } from "../../src/governance/sqlguard/SqlGuard"

const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))
const HASH_KEY = Buffer.from("test-hash-key")

const RULES: Array<PiiRule> = [
  { table: "customers", column: "email", action: "mask" },
  { table: "customers", column: "ssn", action: "redact" },
  { table: "customers", column: "phone", action: "hash" },
  { table: "crm.contacts", column: "email", action: "drop" }
]

const connections: Record<"postgresql" | "mysql" | "duckdb" | "snowflake" | "bigquery", ConnectionInput> = {
  postgresql: { name: "pg", db_type: "postgresql", host: "h", database: "shop", username: "u" },
  mysql: { name: "my", db_type: "mysql", host: "h", database: "shop", username: "u" },
  duckdb: { name: "duck", db_type: "duckdb", database: "/data/shop.duckdb" },
  snowflake: { name: "snow", db_type: "snowflake", account: "a", username: "u", password: "p", database: "shop", schema_name: "public" },
  bigquery: { name: "bq", db_type: "bigquery", project: "p", dataset: "shop", credentials_json: "{}" }
}

/** Masks a result whose columns are `names`, each holding the value `"value-of-<name>"`, and returns what each column became. */
const masking = (dbType: keyof typeof connections, sql: string, names: Array<string>, rules = RULES) => {
  const checked = guard.check(sql, dbType)
  if (Either.isLeft(checked)) throw new Error(`${sql}: ${checked.left.reason}`)
  const result = {
    columns: names.map((name) => ({ name, type: "text" })),
    rows: [names.map((n) => `value-of-${n}`)],
    truncated: false
  }
  const { result: masked, masked: list } = maskResult(result, checked.right, rules, connections[dbType], HASH_KEY)
  return {
    columns: masked.columns.map((c) => c.name),
    row: masked.rows[0],
    rules: Object.fromEntries(list.map((m) => [m.column, m.rule]))
  }
}

describe("PII masking by column lineage", () => {
  for (const dbType of ["postgresql", "mysql", "duckdb"] as const) {
    describe(dbType, () => {
      it("applies a column's rule through an alias, and leaves other columns alone", () => {
        const m = masking(dbType, "select id, email as contact, name from customers", ["id", "contact", "name"])
        expect(m.rules).toEqual({ contact: "mask" })
        expect(m.row).toEqual(["value-of-id", "****tact", "value-of-name"])
      })

      it("redacts an expression that mixes PII into a new value: concatenation, CASE, functions", () => {
        const concat = dbType === "mysql" ? "concat(name, email)" : "name || email"
        const m = masking(dbType, `select ${concat} as c, case when ssn is null then 'none' else ssn end as s, lower(email) as l, upper(name) as n from customers`, ["c", "s", "l", "n"])
        expect(m.rules).toEqual({ c: "redact", s: "redact", l: "redact" })
        expect(m.row).toEqual(["[REDACTED]", "[REDACTED]", "[REDACTED]", "value-of-n"])
      })

      it("follows CTEs, subqueries and renamed CTE columns", () => {
        expect(masking(dbType, "with c as (select email as e from customers) select e from c", ["e"]).rules).toEqual({ e: "mask" })
        expect(masking(dbType, "select t.x from (select phone as x from customers) t", ["x"]).rules).toEqual({ x: "hash" })
        expect(masking(dbType, "with c (a, b) as (select id, ssn from customers) select b, a from c", ["b", "a"]).rules).toEqual({ b: "redact" })
        // A star over CTEs or subqueries whose columns are known is those columns: only the PII one is masked.
        expect(masking(dbType, "with c as (select id, email from customers) select * from c", ["id", "email"]).rules).toEqual({ email: "mask" })
        expect(masking(dbType, "select s.*, 1 as one from (select name, phone from customers) s", ["name", "phone", "one"]).rules).toEqual({ phone: "hash" })
        expect(masking(dbType, "select (select max(email) from customers) as top", ["top"]).rules).toEqual({ top: "redact" })
      })

      it("traces set operations arm by arm", () => {
        const m = masking(dbType, "select name, id from orders union all select email, id from customers", ["name", "id"])
        expect(m.rules).toEqual({ name: "mask" })
      })

      it("expands SELECT * by the result's column names, alone or qualified, and counts reveal nothing", () => {
        expect(masking(dbType, "select * from customers", ["id", "email", "ssn", "name"]).rules).toEqual({ email: "mask", ssn: "redact" })
        expect(masking(dbType, "select o.*, c.email from orders o join customers c on c.id = o.customer_id", ["id", "email", "email"]).rules).toEqual({
          email: "mask"
        })
        expect(masking(dbType, "select count(email), count(*) from customers", ["count", "count"]).rules).toEqual({})
      })

      it("drops and hashes: a dropped column leaves the result, a hash is stable", () => {
        const joined = masking(
          dbType,
          "select c.phone, k.email, k.name from customers c join crm.contacts k on k.id = c.id",
          ["phone", "email", "name"]
        )
        expect(joined.columns).toEqual(["phone", "name"])
        expect(joined.rules).toEqual({ phone: "hash", email: "drop" })
        expect(joined.row![0]).toMatch(/^[0-9a-f]{64}$/)
        expect(masking(dbType, "select phone from customers", ["phone"]).row).toEqual(joined.row!.slice(0, 1))
      })

      it("an unqualified name in a join counts for every table that could hold it", () => {
        expect(masking(dbType, "select email from orders join customers on customers.id = orders.customer_id", ["email"]).rules).toEqual({
          email: "mask"
        })
      })

      it("no PII table touched: nothing is masked, even for a column of the same name", () => {
        expect(masking(dbType, "select email, ssn from leads", ["email", "ssn"]).rules).toEqual({})
        expect(masking(dbType, "select email from contacts", ["email"]).rules).toEqual({})
      })
    })
  }

  it("when lineage cannot map the result, every column is redacted", () => {
    // Two stars and a computed PII column: which result column is which cannot be known.
    const m = masking("postgresql", "select o.*, c.*, lower(c.email) from orders o, customers c", ["id", "x", "email", "lower"])
    expect(Object.values(m.rules)).toEqual(["redact", "redact", "redact", "redact"])
  })

  it("rules match schema-qualified names after resolving the default schema", () => {
    const rules: Array<PiiRule> = [{ table: "public.customers", column: "email", action: "redact" }]
    expect(masking("postgresql", "select email from customers", ["email"], rules).rules).toEqual({ email: "redact" })
    expect(masking("postgresql", "select email from shop.public.customers", ["email"], rules).rules).toEqual({ email: "redact" })
    expect(masking("postgresql", "select email from other.customers", ["email"], rules).rules).toEqual({})
  })
})

describe("PII masking of whole-row references", () => {
  for (const dbType of ["postgresql", "duckdb"] as const) {
    it(`${dbType}: a table's whole row, as a value or inside a function, is redacted`, () => {
      expect(masking(dbType, "select c from customers c", ["c"]).rules).toEqual({ c: "redact" })
      expect(masking(dbType, "select id, to_json(customers) as j from customers", ["id", "j"]).rules).toEqual({ j: "redact" })
      expect(masking(dbType, "select count(c) as n from customers c", ["n"]).rules).toEqual({})
      // A column that is merely named like nothing in FROM is left alone.
      expect(masking(dbType, "select id from customers c", ["id"]).rules).toEqual({})
    })
  }
})

describe("PII masking of table expressions over a table", () => {
  it("PIVOT, TABLESAMPLE and a set-returning function over a subquery redact the result whole", () => {
    expect(masking("duckdb", "select * from customers pivot (max(ssn) for name in ('a', 'b'))", ["id", "a", "b"]).rules).toEqual({ id: "redact", a: "redact", b: "redact" })
    expect(masking("postgresql", "select * from customers tablesample system (100)", ["id", "email"]).rules).toEqual({ id: "redact", email: "redact" })
    expect(masking("postgresql", "select * from unnest(array(select ssn from customers)) u", ["u"]).rules).toEqual({ u: "redact" })
  })

  it("a parenthesized join is read as the same join", () => {
    expect(masking("duckdb", "select * from (customers c join orders o on c.id = o.customer_id)", ["id", "email", "customer_id"]).rules).toEqual({ email: "mask" })
    expect(masking("mysql", "select c.email from (customers c join orders o on c.id = o.customer_id)", ["email"]).rules).toEqual({ email: "mask" })
  })
})

describe("PII masking and star modifiers", () => {
  it("a star that replaces or renames columns cannot hide a PII column under another name: the result is redacted whole", () => {
    expect(masking("duckdb", "select * replace (ssn as id) from customers", ["id", "email", "ssn", "name"]).rules).toEqual({
      id: "redact",
      email: "redact",
      ssn: "redact",
      name: "redact"
    })
    expect(masking("duckdb", "with c as (select id, ssn from customers) select * replace (ssn as id) from c", ["id", "ssn"]).rules).toEqual({ id: "redact", ssn: "redact" })
    expect(masking("bigquery", "select * replace (ssn as id) from customers", ["id", "email", "ssn", "name"]).rules["id"]).toBe("redact")
  })

  it("COLUMNS(…), which picks columns by pattern when the query runs, redacts the result whole", () => {
    expect(masking("duckdb", "select columns('ss.*') from customers", ["ssn"]).rules).toEqual({ ssn: "redact" })
    expect(masking("duckdb", "select id, upper(columns('e.*')) as x from customers", ["id", "x"]).rules).toEqual({ id: "redact", x: "redact" })
  })

  it("a star that only leaves columns out still masks by name", () => {
    expect(masking("snowflake", "select * exclude (id) from customers", ["email", "ssn", "name"]).rules).toEqual({ email: "mask", ssn: "redact" })
    expect(masking("bigquery", "select * except (id) from customers", ["email", "ssn", "name"]).rules).toEqual({ email: "mask", ssn: "redact" })
  })
})

/** Issue 16 item 4: references the lineage walked past, each leaking raw values with pii_masked []. */
describe("PII lineage without gaps", () => {
  const leaks = (dbType: keyof typeof connections, sql: string, names: Array<string>) => {
    const m = masking(dbType, sql, names)
    return names.filter((n) => m.rules[n] === undefined)
  }

  for (const dbType of ["postgresql", "mysql", "duckdb"] as const) {
    it(`${dbType}: a correlated subquery in the select list`, () => {
      expect(leaks(dbType, "select (select c.email) as e from customers c", ["e"])).toEqual([])
      expect(leaks(dbType, "select (select email) as e from customers", ["e"])).toEqual([])
      expect(leaks(dbType, "select id, (select c.email from orders o where o.customer_id = c.id limit 1) as e from customers c", ["id", "e"])).toEqual(["id"])
    })
    it(`${dbType}: a LATERAL subquery reaching an earlier table`, () => {
      expect(leaks(dbType, "select l.e from customers c, lateral (select c.email as e) l", ["e"])).toEqual([])
    })
  }

  it("an alias column list renames a PII table's columns", () => {
    for (const dbType of ["postgresql", "duckdb"] as const) {
      expect(leaks(dbType, "select n from customers as c(a, b, n)", ["n"])).toEqual([])
      expect(leaks(dbType, "select * from customers as c(a, b, n)", ["a", "b", "n"])).toEqual([])
    }
  })

  it("postgresql: LATERAL functions and VALUES over a PII column, and ARRAY(subquery)", () => {
    expect(leaks("postgresql", "select u from customers c, lateral unnest(array[c.email]) u", ["u"])).toEqual([])
    expect(leaks("postgresql", "select v.x from customers c, lateral (values (c.email)) v(x)", ["x"])).toEqual([])
    expect(leaks("postgresql", "select array(select c.email) as a from customers c", ["a"])).toEqual([])
    expect(leaks("postgresql", "select x from (values (1, 'a')) v(n, x)", ["x"])).toEqual(["x"])
  })

  it("duckdb: method-call syntax", () => {
    expect(leaks("duckdb", "select email.upper() as e from customers", ["e"])).toEqual([])
    expect(leaks("duckdb", "select c.email.lower() as e from customers c", ["e"])).toEqual([])
  })

  it("a qualifier that names no relation in reach redacts the whole result", () => {
    const m = masking("postgresql", "select x.email as e, c.id from customers c", ["e", "id"])
    expect(m.rules).toEqual({ e: "redact", id: "redact" })
  })
})
