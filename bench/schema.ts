/**
 * Schema scans and search at size: a PostgreSQL catalog of 1,000 and of 10,000 generated tables
 * (10 schemas, 8 columns each, a primary key, a foreign key on every third table, comments on every
 * tenth) scanned through the gateway's refresh route, next to the same tables and columns read
 * through information_schema; then schema search over the 10,000 tables, over REST and in process.
 * Not a test: prints Markdown for bench/README.md.
 *
 *   npm run bench:schema [-- --queries 500]
 */
import * as os from "node:os"
import { performance } from "node:perf_hooks"
import { parseArgs } from "node:util"
import pg from "pg"
import type { TableInfo } from "../src/domain/SchemaSnapshot"
import { informationSchemaCatalog } from "../src/schema/catalog/InformationSchema"
import { SchemaSearch } from "../src/schema/SchemaSearch"
import { localKey, startGateway } from "../test/support/Gateway"
import { request } from "../test/support/Http"
import { createTestDatabase, type TestDatabase } from "../test/support/Servers"
import { UNLIMITED } from "./support/Load"

const { values } = parseArgs({ options: { queries: { type: "string", default: "500" } } })
const QUERIES = Number(values.queries)
const SIZES = [1_000, 10_000]

const DOMAINS = ["sales", "billing", "hr", "support", "inventory", "shipping", "marketing", "finance", "product", "identity"]
const ENTITIES = ["customer", "order", "invoice", "payment", "ticket", "shipment", "campaign", "account", "employee", "session", "event", "refund"]
const WORDS = [...DOMAINS, ...ENTITIES, "status", "amount", "created", "region", "total", "note"]

const tableName = (i: number) => `${ENTITIES[i % ENTITIES.length]}_${ENTITIES[Math.floor(i / ENTITIES.length) % ENTITIES.length]}_${i}`

/** DDL for `count` tables, in batches of 500 statements per round trip. */
const createTables = async (database: TestDatabase, count: number) => {
  await database.query(DOMAINS.map((d) => `create schema ${d};`).join("\n"))
  for (let start = 0; start < count; start += 500) {
    const statements: Array<string> = []
    for (let i = start; i < Math.min(count, start + 500); i++) {
      const schema = DOMAINS[i % DOMAINS.length]
      const fk = i % 3 === 0 && i >= DOMAINS.length ? `, parent_id int references ${DOMAINS[(i - DOMAINS.length) % DOMAINS.length]}.${tableName(i - DOMAINS.length)} (id)` : ""
      statements.push(
        `create table ${schema}.${tableName(i)} (id int primary key, status text, amount numeric(12, 2), created_at timestamptz, region text, total_count int, note text${fk});`
      )
      if (i % 10 === 0) statements.push(`comment on table ${schema}.${tableName(i)} is 'The ${ENTITIES[i % ENTITIES.length]} records of ${schema}';`)
    }
    await database.query(statements.join("\n"))
  }
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const ms = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(0))

const gateway = await startGateway({ env: UNLIMITED })
const key = await localKey(gateway)
const api = (route: string, body?: unknown) => request(gateway.url, route, { key, ...(body === undefined ? {} : { body }) })
const scanRows: Array<string> = []
const searchRows: Array<string> = []
const databases: Array<TestDatabase> = []
try {
  let largest: ReadonlyArray<TableInfo> = []
  for (const size of SIZES) {
    const database = await createTestDatabase()
    databases.push(database)
    const created = performance.now()
    await createTables(database, size)
    console.error(`${size} tables created in ${Math.round((performance.now() - created) / 1000)} s`)
    const name = `bench_${size}`
    await api("/api/connections", { name, db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" })

    const started = performance.now()
    await api(`/api/connections/${name}/schema/refresh`, {})
    for (;;) {
      const status = (await api(`/api/connections/${name}/schema/refresh-status`)).json
      if (status.state === "failed") throw new Error(status.error)
      if (status.state === "done") break
      await new Promise((r) => setTimeout(r, 20))
    }
    const wall = performance.now() - started
    const schema = (await api(`/api/connections/${name}/schema`)).json
    if (schema.table_count !== size) throw new Error(`scanned ${schema.table_count} tables, expected ${size}`)

    // The same tables and columns (no keys, comments, indexes or sizes) through information_schema, straight from pg.
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    const standard = informationSchemaCatalog()
    const before = performance.now()
    await client.query(standard.relations)
    await client.query(standard.columns)
    const infoSchema = performance.now() - before
    await client.end()

    scanRows.push(`| ${size.toLocaleString("en")} | ${schema.column_count.toLocaleString("en")} | ${ms(schema.scan_ms)} | ${ms(wall)} | ${ms(infoSchema)} |`)
    console.error(`${size}: catalog ${Math.round(schema.scan_ms)} ms, refresh ${Math.round(wall)} ms, information_schema ${Math.round(infoSchema)} ms`)
    largest = schema.tables
  }

  const queries = Array.from({ length: QUERIES }, (_, i) => `${WORDS[(i * 7) % WORDS.length]} ${WORDS[(i * 13 + 3) % WORDS.length]}`)
  const name = `bench_${SIZES.at(-1)}`
  await api(`/api/connections/${name}/schema/search?q=warmup`)
  const rest: Array<number> = []
  for (const q of queries) {
    const t = performance.now()
    const res = await api(`/api/connections/${name}/schema/search?limit=20&q=${encodeURIComponent(q)}`)
    rest.push(performance.now() - t)
    if (res.status !== 200) throw new Error(res.text)
  }
  const building = performance.now()
  const index = new SchemaSearch(largest)
  const built = performance.now() - building
  const local: Array<number> = []
  for (const q of queries) {
    const t = performance.now()
    index.search(q, { tables: 20, columns: 20 })
    local.push(performance.now() - t)
  }
  for (const [label, samples] of [
    ["REST `GET …/schema/search` (1 client)", rest],
    ["in process (tables + columns)", local]
  ] as const) {
    const sorted = [...samples].sort((a, b) => a - b)
    searchRows.push(`| ${label} | ${ms(percentile(sorted, 0.5))} | ${ms(percentile(sorted, 0.99))} |`)
  }
  searchRows.push(`\nIndex build over ${largest.length.toLocaleString("en")} tables (done once per snapshot version): ${ms(built)} ms.`)
} finally {
  await gateway.stop()
  for (const database of databases) await database.drop()
}

const cpus = os.cpus()
console.log(`Machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`)
console.log("Gateway on its embedded store; PostgreSQL on loopback.\n")
console.log("| tables | columns | catalog reads ms (pg_catalog) | refresh wall ms (POST → done) | information_schema tables + columns ms |")
console.log("|---:|---:|---:|---:|---:|")
console.log(scanRows.join("\n"))
console.log(`\n${QUERIES} two-word queries over the ${SIZES.at(-1)!.toLocaleString("en")}-table schema:\n`)
console.log("| search | p50 ms | p99 ms |")
console.log("|---|---:|---:|")
console.log(searchRows.join("\n"))
