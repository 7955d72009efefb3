import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import type { ConnectionInput, DbType } from "../../src/domain/Connection"
import type { PiiRule } from "../../src/domain/Pii"
import type { TableInfo } from "../../src/domain/SchemaSnapshot"
import { hashPadsOf, maskText, withoutKey } from "../../src/governance/MaskExpressions"
import { maskAtSource, maskingCatalog } from "../../src/governance/SourceMasking"
import { rulesThroughRelations } from "../../src/governance/ViewLineage"
import { SqlGuard } from "../../src/governance/sqlguard/SqlGuard"
import { tablePolicyRefusal } from "../../src/governance/TablePolicy"

const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))
const pads = hashPadsOf(Buffer.alloc(32, 7))

const CONNECTIONS: Record<DbType, ConnectionInput> = {
  postgresql: { name: "c", db_type: "postgresql", host: "h", database: "shop", username: "u" },
  redshift: { name: "c", db_type: "redshift", host: "h", database: "shop", username: "u" },
  mysql: { name: "c", db_type: "mysql", host: "h", database: "shop", username: "u" },
  sqlite: { name: "c", db_type: "sqlite", database: "/data/shop.sqlite" },
  duckdb: { name: "c", db_type: "duckdb", database: "/data/shop.duckdb" },
  mssql: { name: "c", db_type: "mssql", host: "h", database: "shop", username: "u" },
  snowflake: { name: "c", db_type: "snowflake", account: "a", username: "u", database: "SHOP", schema_name: "PUBLIC" },
  bigquery: { name: "c", db_type: "bigquery", project: "p", dataset: "shop" },
  clickhouse: { name: "c", db_type: "clickhouse", host: "h", database: "shop", username: "u" },
  databricks: { name: "c", db_type: "databricks", host: "h", http_path: "/sql", catalog: "main", schema_name: "shop" },
  trino: { name: "c", db_type: "trino", host: "h", catalog: "hive", schema_name: "shop", username: "u" }
} as unknown as Record<DbType, ConnectionInput>

const SCHEMA: Record<DbType, string> = {
  postgresql: "public",
  redshift: "public",
  mysql: "shop",
  sqlite: "main",
  duckdb: "main",
  mssql: "dbo",
  snowflake: "PUBLIC",
  bigquery: "shop",
  clickhouse: "shop",
  databricks: "shop",
  trino: "shop"
}

const table = (schema: string, name: string, columns: ReadonlyArray<readonly [string, string]>, extra: Partial<TableInfo> = {}): TableInfo => ({
  schema,
  name,
  kind: "table",
  comment: null,
  row_estimate: null,
  size_bytes: null,
  columns: columns.map(([column, type]) => ({ name: column, type, nullable: true, default: null, comment: null, primary_key: false, distinct_estimate: null, null_fraction: null })),
  primary_key: [],
  foreign_keys: [],
  unique_keys: [],
  indexes: [],
  definition: null,
  partition_key: null,
  sort_keys: [],
  cluster_keys: [],
  engine: null,
  ...extra
})

const RULES: ReadonlyArray<PiiRule> = [
  { table: "customers", column: "email", action: "mask" },
  { table: "customers", column: "ssn", action: "redact" },
  { table: "customers", column: "phone", action: "hash" },
  { table: "customers", column: "salary", action: "drop" }
]

const catalogFor = (dbType: DbType) => {
  const schema = SCHEMA[dbType]
  const tables = [
    table(schema, "customers", [["id", "int"], ["email", "varchar(100)"], ["ssn", "text"], ["phone", "varchar"], ["salary", "numeric"]]),
    table(schema, "orders", [["id", "int"], ["customer_id", "int"], ["total", "numeric"]]),
    table(schema, "v_emails", [["email", "text"]], { kind: "view", definition: "select email from customers where ssn like '1%'" })
  ]
  const connection = CONNECTIONS[dbType]
  const check = (sql: string) => guard.check(sql, dbType, "any")
  return maskingCatalog("k", new Date(0), tables, [...RULES, { table: `${schema}.v_emails`, column: "email", action: "mask" }], connection, (definition) => {
    const checked = check(definition)
    return Either.isLeft(checked) ? undefined : checked.right.analysis.tables
  })
}

const rewrite = (dbType: DbType, sql: string) => {
  const checked = guard.check(sql, dbType)
  if (Either.isLeft(checked)) throw new Error(`${sql}: ${checked.left.reason}`)
  return maskAtSource(checked.right, CONNECTIONS[dbType], catalogFor(dbType), pads, (text) => guard.check(text, dbType, "any"))
}

const ALL: ReadonlyArray<DbType> = ["postgresql", "redshift", "mysql", "sqlite", "duckdb", "mssql", "snowflake", "bigquery", "clickhouse", "databricks", "trino"]

describe("masking at the source, the rewrite itself, on every dialect", () => {
  for (const dbType of ALL) {
    it(`${dbType}: each read of a masked relation is replaced by its masking projection, in the dialect's own SQL`, () => {
      const top = dbType === "mssql" ? "select top 5" : "select"
      const statements = [
        `${top} id, email from customers`,
        `${top} c.id, o.total from customers c join orders o on o.customer_id = c.id where c.email = 'x'`,
        `with x as (select * from customers) ${top} count(*) from x where ssn is null`,
        `${top} (select count(*) from customers c2 where c2.phone < c.phone) from customers as c`,
        `${top} id from orders where customer_id in (select id from customers where salary > 10)`
      ]
      for (const sql of statements) {
        const masked = rewrite(dbType, sql)
        if (Either.isLeft(masked)) throw new Error(`${dbType}: ${sql}: ${masked.left.reason}`)
        expect(masked.right.rewritten, sql).toBe(true)
        // Every read of customers now reads its projection; orders is left as written.
        expect(masked.right.sql.match(/\(select /g)?.length ?? 0, sql).toBeGreaterThanOrEqual((sql.match(/customers/g) ?? []).length)
        expect(masked.right.sql, sql).not.toMatch(/from orders\)/)
      }
      // A read of no masked relation runs as written.
      expect(rewrite(dbType, `${top} total from orders`)).toEqual(Either.right({ sql: `${top} total from orders`, rewritten: false, computesOverPii: false }))
    })

    it(`${dbType}: a relation no scan lists is refused`, () => {
      const unknown = rewrite(dbType, "select * from nowhere")
      expect(Either.isLeft(unknown) && unknown.left.reason).toMatch(/there is no relation nowhere in the connection's schema as scanned at/)
    })
  }

  it("keeps the alias a reference has, gives an unaliased one its own name as written, and reads the table by its qualified name", () => {
    const masked = Either.getOrThrow(rewrite("postgresql", 'select customers.id, "c".email from customers, customers as "c"'))
    expect(masked.sql).toMatch(/^select customers\.id, "c"\.email from \(select "id", .* from "public"\."customers"\) as customers, \(select "id", .* from "public"\."customers"\) as "c" order by 1, 2$/)
    const quoted = Either.getOrThrow(rewrite("postgresql", 'select * from public."customers"'))
    expect(quoted.sql).toMatch(/from "public"\."customers"\) as "customers" order by 1, 2, 3, 4, 5$/)
    // A later CTE of the same name (WITH RECURSIVE lets an earlier one read it) is not what the projection reads.
    const shadowed = Either.getOrThrow(rewrite("postgresql", "with recursive g as (select phone from customers), customers as (select 1 as phone) select * from g"))
    expect(shadowed.sql).toMatch(/^with recursive g as \(select phone from \(select .* from "public"\."customers"\) as customers\)/)
  })

  it("masks to a fixed fill and the last four characters, only of values long enough to hide most of themselves", () => {
    expect([maskText("alice@example.com"), maskText("abcdefgh"), maskText("abcdefg"), maskText("b@x"), maskText("")]).toEqual(["****.com", "****efgh", "****", "****", "****"])
  })

  it("refuses the places a derived table cannot stand, rather than leave the relation unmasked", () => {
    for (const sql of ["table customers", "select * from only customers", "select * from customers tablesample system (50)"]) {
      const masked = rewrite("postgresql", sql)
      expect(Either.isLeft(masked), sql).toBe(true)
    }
  })

  it("refuses a partition placed by a masked column's value, at any level, and reads the others", () => {
    const visits = table("public", "visits", [["id", "int"], ["email", "text"]], {
      partition_key: "RANGE (id)",
      descendants: [
        { schema: "public", table: "visits_low", parent: { schema: "public", table: "visits" }, partition_key: "LIST (lower(email))" },
        { schema: "public", table: "visits_low_a", parent: { schema: "public", table: "visits_low" } },
        { schema: "public", table: "visits_high", parent: { schema: "public", table: "visits" } }
      ]
    })
    const catalog = maskingCatalog("k", new Date(0), [visits], [{ table: "visits", column: "email", action: "mask" }], CONNECTIONS.postgresql, () => [])
    const masked = (sql: string) => maskAtSource(Either.getOrThrow(guard.check(sql, "postgresql")), CONNECTIONS.postgresql, catalog, pads, (text) => guard.check(text, "postgresql", "any"))
    const refused = masked("select count(*) from visits_low_a")
    expect(Either.isLeft(refused) && refused.left.reason).toMatch(/visits_low_a holds a share of public\.visits's rows, chosen by a partition key .* read public\.visits instead/)
    for (const sql of ["select count(*) from visits", "select count(*) from visits_low", "select count(*) from visits_high"]) expect(Either.isRight(masked(sql)), sql).toBe(true)
  })

  it("refuses an inheritance child of a table with masked columns: its writers or its constraints chose its rows", () => {
    const staff = table("public", "staff", [["id", "int"], ["salary", "numeric"]], {
      descendants: [{ schema: "public", table: "staff_high", parent: { schema: "public", table: "staff" } }]
    })
    const plain = table("public", "teams", [["id", "int"]], { descendants: [{ schema: "public", table: "teams_eu", parent: { schema: "public", table: "teams" } }] })
    const catalog = maskingCatalog("k", new Date(0), [staff, plain], [{ table: "staff", column: "salary", action: "redact" }], CONNECTIONS.postgresql, () => [])
    const masked = (sql: string) => maskAtSource(Either.getOrThrow(guard.check(sql, "postgresql")), CONNECTIONS.postgresql, catalog, pads, (text) => guard.check(text, "postgresql", "any"))
    expect(Either.isLeft(masked("select id from staff_high"))).toBe(true)
    for (const sql of ["select id, salary from staff", "select id from teams_eu"]) expect(Either.isRight(masked(sql)), sql).toBe(true)
  })

  it("marks a read of a view that computes with a PII column, whose errors could quote one", () => {
    expect(Either.getOrThrow(rewrite("postgresql", "select * from v_emails")).computesOverPii).toBe(true)
    expect(Either.getOrThrow(rewrite("postgresql", "select * from customers")).computesOverPii).toBe(false)
  })

  it("takes the hash key out of a message, even a quote cut short, and the excerpt of a rewritten statement", () => {
    const scrub = withoutKey(pads)
    expect(scrub(`near 'sha2(concat(unhex('${pads.outer}'), unhex(sha2(concat(unhex('${pads.inner.slice(0, 30)}`)).not.toMatch(new RegExp(`${pads.outer.slice(0, 8)}|${pads.inner.slice(0, 8)}`))
    expect(scrub(`Conversion Error: x\n\nLINE 2: select email::int from (select "id", '****' || right…\n   ^`)).toBe("Conversion Error: x")
    expect(scrub("invalid input syntax for type uuid: 0123456789abcdef")).toBe("invalid input syntax for type uuid: 0123456789abcdef")
  })
})

describe("one name resolver: a CTE shadows a table only where the engine resolves the two names alike", () => {
  const refusal = (dbType: DbType, sql: string, blocked: ReadonlyArray<string>) => {
    const checked = guard.check(sql, dbType)
    if (Either.isLeft(checked)) throw new Error(`${sql}: ${checked.left.reason}`)
    return tablePolicyRefusal(checked.right.analysis.tables, { ...CONNECTIONS[dbType], blocked_tables: [...blocked] } as ConnectionInput)
  }
  it("case-sensitive engines read a differently cased name as the table", () => {
    expect(refusal("clickhouse", "with Secrets as (select 1) select * from secrets", ["secrets"])).toMatch(/blocked/)
    expect(refusal("snowflake", 'with "secrets" as (select 1) select * from secrets', ["secrets"])).toMatch(/blocked/)
    expect(refusal("snowflake", "with secrets as (select 1) select * from SECRETS", ["secrets"])).toBeUndefined()
    expect(refusal("duckdb", "with Secrets as (select 1) select * from secrets", ["secrets"])).toBeUndefined()
  })
  it("an engine folds ASCII letters only: a CTE spelled with the Kelvin sign is not the table spelled with k", () => {
    for (const dbType of ["sqlite", "duckdb", "trino"] as const) {
      expect(refusal(dbType, "with ban\u212A as (select 1 as x) select * from bank", ["bank"]), dbType).toMatch(/blocked/)
    }
  })
  it("DuckDB's file catalog written out is the default catalog", () => {
    for (const name of ["shop.secrets", "shop.main.secrets", "SHOP.SECRETS", '"shop"."main"."secrets"']) {
      expect(refusal("duckdb", `select * from ${name}`, ["secrets"]), name).toMatch(/blocked/)
    }
  })
  it("MySQL lists another database's tables only where allow-listed", () => {
    const show = (sql: string, allowed?: ReadonlyArray<string>) => {
      const checked = Either.getOrThrow(guard.check(sql, "mysql"))
      const connection = { ...CONNECTIONS.mysql, ...(allowed === undefined ? {} : { allowed_tables: [...allowed] }) } as ConnectionInput
      return tablePolicyRefusal(checked.analysis.tables, connection, undefined, checked.analysis.databases)
    }
    expect(show("show tables from other_db")).toMatch(/the database other_db is not this connection's/)
    expect(show("show columns from other_db.t")).toMatch(/another database/)
    expect(show("show full tables in other_db")).toMatch(/the database other_db is not this connection's/)
    expect(show("show columns from t from other_db")).toMatch(/another database/)
    expect(show("describe other_db.t")).toMatch(/another database/)
    expect(show("show tables from shop")).toBeUndefined()
    expect(show("show tables")).toBeUndefined()
    expect(show("show tables from other_db", ["other_db.t"])).toBeUndefined()
  })
})

describe("rules for columns computed from masked ones", () => {
  it("a generated column gets the rule of the column it passes through, redaction when it computes from one; plain defaults get none", () => {
    for (const dbType of ["postgresql", "mysql", "duckdb"] as const) {
      const schema = SCHEMA[dbType]
      const columns = table(schema, "customers", [["id", "int"], ["email", "text"], ["email_lc", "text"], ["email_copy", "text"], ["created", "timestamp"], ["note", "text"], ["odd", "text"]]).columns
      const defaults: Record<string, string> = {
        id: "nextval('customers_id_seq'::regclass)",
        email_lc: dbType === "mysql" ? "lower(`email`)" : "lower(email)",
        email_copy: "email",
        created: "now()",
        note: "'no email here'",
        odd: "email ||| broken ("
      }
      const customers = { ...table(schema, "customers", []), columns: columns.map((c) => ({ ...c, default: defaults[c.name] ?? null })) }
      const derived = rulesThroughRelations([customers], [{ table: "customers", column: "email", action: "mask" }], CONNECTIONS[dbType], (sql) => guard.check(sql, dbType, "any"))
      expect(derived.map((r) => [r.column, r.action]).sort(), dbType).toEqual([["email_copy", "mask"], ["email_lc", "redact"], ["odd", "redact"]])
    }
  })
})
