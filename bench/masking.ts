/**
 * What masking at the source costs (issue 26): the rewrite of a statement that reads a table with
 * PII rules beside the read-only check it follows, new and repeated, per dialect; then what the
 * rewritten statement costs PostgreSQL beside the statement as written (a point lookup by key, a
 * listing of a third of the table with and without the row cap, and the 2 KB analytic query, run
 * directly through `pg`; the rewrite masks and puts rows in an order of their own values), and what
 * confirming a statement's relations against the catalog costs. Not a test: prints Markdown for bench/README.md.
 *
 *   npm run bench:masking
 */
import * as os from "node:os"
import { Effect, Either } from "effect"
import pg from "pg"
import type { ConnectionInput, DbType } from "../src/domain/Connection"
import type { TableInfo } from "../src/domain/SchemaSnapshot"
import { hashPadsOf } from "../src/governance/MaskExpressions"
import { maskAtSource, maskedAtSource, maskingCatalog } from "../src/governance/SourceMasking"
import { SqlGuard } from "../src/governance/sqlguard/SqlGuard"
import { postgresCatalog } from "../src/schema/catalog/Postgres"
import { createTestDatabase } from "../test/support/Servers"
import { ANALYTIC } from "./support/Statements"

const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))
const pads = hashPadsOf(Buffer.alloc(32, 7))

const CONNECTIONS: Partial<Record<DbType, ConnectionInput>> = {
  postgresql: { name: "c", db_type: "postgresql", host: "h", database: "shop", username: "u" } as ConnectionInput,
  mysql: { name: "c", db_type: "mysql", host: "h", database: "shop", username: "u" } as ConnectionInput,
  duckdb: { name: "c", db_type: "duckdb", database: "/data/shop.duckdb" } as ConnectionInput
}
const SCHEMA: Partial<Record<DbType, string>> = { postgresql: "public", mysql: "shop", duckdb: "main" }

const table = (schema: string, name: string, columns: ReadonlyArray<readonly [string, string]>): TableInfo => ({
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
  engine: null
})

const CUSTOMERS: ReadonlyArray<readonly [string, string]> = [
  ["id", "int"], ["name", "text"], ["email", "text"], ["ssn", "text"], ["phone", "text"], ["country", "text"], ["segment", "text"]
]
const catalogOf = (dbType: DbType) => {
  const schema = SCHEMA[dbType]!
  const tables = [
    table(schema, "customers", CUSTOMERS),
    table(schema, "orders", [["id", "int"], ["customer_id", "int"], ["total", "numeric"], ["status", "text"], ["created_at", "timestamp"]]),
    table(schema, "excluded_countries", [["country", "text"]])
  ]
  const rules = [
    { table: "customers", column: "email", action: "mask" },
    { table: "customers", column: "ssn", action: "redact" },
    { table: "customers", column: "phone", action: "hash" }
  ] as const
  return maskingCatalog("bench", new Date(), tables, rules, CONNECTIONS[dbType]!, () => [])
}

const POINT = "select id, name, email, phone from customers where id = 42"
// A third of the customers, as a caller lists them: with the gateway's row cap (1,000 + 1) and without.
const LISTING = "select id, name, email, country from customers where segment = 'smb'"
const statementsOf = (dbType: DbType) => ({
  point: POINT,
  "listing, capped": `${LISTING} limit 1001`,
  listing: LISTING,
  analytic: dbType === "mysql" ? ANALYTIC.replace("percentile_cont(0.5) within group (order by r.lifetime)", "avg(r.lifetime)") : ANALYTIC
})

const microseconds = (n: number, run: (i: number) => void) => {
  for (let i = 0; i < Math.min(200, n); i++) run(i)
  const started = performance.now()
  for (let i = 0; i < n; i++) run(i)
  return ((performance.now() - started) / n) * 1000
}

const cpuRows: Array<string> = []
for (const dbType of ["postgresql", "mysql", "duckdb"] as const) {
  const catalog = catalogOf(dbType)
  const connection = CONNECTIONS[dbType]!
  for (const [name, sql] of Object.entries(statementsOf(dbType))) {
    const checked = (text: string) => {
      const verdict = guard.check(text, dbType)
      if (Either.isLeft(verdict)) throw new Error(`${dbType} ${name}: ${verdict.left.reason}`)
      return verdict.right
    }
    const recheck = (text: string) => guard.check(text, dbType, "any")
    // A comment that differs on every call defeats the memos: this is the parse, the rewrite and its check.
    const fresh = (i: number) => `${sql}\n-- ${name} ${i}`
    const check = microseconds(2000, (i) => checked(fresh(i)))
    const prepared = Array.from({ length: 2200 }, (_, i) => checked(fresh(i + 10_000)))
    const rewrite = microseconds(2000, (i) => {
      const masked = maskAtSource(prepared[i]!, connection, catalog, pads, recheck)
      if (Either.isLeft(masked) || !masked.right.rewritten) throw new Error(`${dbType} ${name}: not rewritten`)
    })
    const repeated = checked(sql)
    const hit = microseconds(20_000, () => maskedAtSource(repeated, connection, catalog, pads, recheck))
    const rewritten = Either.getOrThrow(maskAtSource(repeated, connection, catalog, pads, recheck)).sql
    cpuRows.push(`| ${dbType} | ${name} (${sql.length} → ${rewritten.length} chars) | ${check.toFixed(0)} | ${rewrite.toFixed(0)} | ${hit.toFixed(2)} |`)
  }
}

// The database's side: the statement as written and as rewritten, straight through pg.
const database = await createTestDatabase()
const dbRows: Array<string> = []
let confirmP50 = 0
try {
  await database.query(`create table customers (id int primary key, name text, email text, ssn text, phone text, country text, segment text);
    insert into customers select g, 'name ' || g, 'user' || g || '@example.com', '123-45-' || g, '+1 555 ' || g, (array['FR','DE','US'])[1 + g % 3], (array['smb','ent',''])[1 + g % 3] from generate_series(1, 20000) g;
    create table orders (id int primary key, customer_id int, total numeric, status text, created_at timestamp);
    insert into orders select g, 1 + g % 20000, g % 500, (array['paid','shipped','open'])[1 + g % 3], timestamp '2024-01-01' + g * interval '1 minute' from generate_series(1, 100000) g;
    create table excluded_countries (country text); insert into excluded_countries values ('US');
    analyze`)
  const pool = new pg.Pool({ connectionString: database.url, max: 1 })
  const catalog = catalogOf("postgresql")
  for (const [name, sql] of Object.entries(statementsOf("postgresql"))) {
    const checked = Either.getOrThrow(guard.check(sql, "postgresql"))
    const rewritten = Either.getOrThrow(maskAtSource(checked, CONNECTIONS.postgresql!, catalog, pads, (text) => guard.check(text, "postgresql", "any"))).sql
    const runs = name === "point" ? 3000 : name.startsWith("listing") ? 300 : 30
    const p50 = async (text: string) => {
      const times: Array<number> = []
      for (let i = 0; i < runs + 10; i++) {
        const started = performance.now()
        await pool.query(text)
        if (i >= 10) times.push(performance.now() - started)
      }
      return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!
    }
    const [asWritten, asRewritten] = [await p50(sql), await p50(rewritten)]
    dbRows.push(`| ${name} | ${asWritten.toFixed(3)} | ${asRewritten.toFixed(3)} | ${(asRewritten - asWritten).toFixed(3)} |`)
  }
  // What the query path reads to confirm a statement's relations against the snapshot, at most once a second per relation.
  await database.query("create view v_customers as select id, name, email from customers")
  const confirm = postgresCatalog.relationsNow!([{ schema: "public", name: "customers" }, { schema: "public", name: "v_customers" }])
  const times: Array<number> = []
  for (let i = 0; i < 3010; i++) {
    const started = performance.now()
    await pool.query(confirm)
    if (i >= 10) times.push(performance.now() - started)
  }
  confirmP50 = times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!
  await pool.end()
} finally {
  await database.drop()
}

console.log(`Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}\n`)
console.log("Rules on customers: email mask, ssn redact, phone hash. µs of CPU per statement, one thread:\n")
console.log("| dialect | statement | read-only check, new (µs) | rewrite at the source, new (µs) | rewrite, repeated (memo, µs) |")
console.log("|---|---|---:|---:|---:|")
for (const row of cpuRows) console.log(row)
console.log("\nPostgreSQL 15 (loopback), one connection, p50 ms of the statement as written and as rewritten (20,000 customers, 100,000 orders):\n")
console.log("| statement | as written | rewritten | added |")
console.log("|---|---:|---:|---:|")
for (const row of dbRows) console.log(row)
console.log(`\nConfirming a table and a view against the catalog (kind and definition, one statement): p50 ${confirmP50.toFixed(3)} ms.`)
