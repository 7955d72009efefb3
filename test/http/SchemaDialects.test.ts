import { randomBytes } from "node:crypto"
import * as path from "node:path"
import { DuckDBInstance } from "@duckdb/node-api"
import Database from "better-sqlite3"
import mysql from "mysql2/promise"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { RELEVANCE_QUESTIONS, RELEVANCE_TABLES_SQL } from "../support/SchemaFixtures"
import { mysqlAvailable, mysqlConnection, TEST_MYSQL_URL } from "../support/Servers"

const hasMysql = await mysqlAvailable()

const tableOf = (schema: { tables: ReadonlyArray<{ schema: string; name: string }> }, name: string) =>
  schema.tables.find((t) => t.name === name) as any

describe("schema scans of MariaDB, SQLite and DuckDB, and search relevance", () => {
  let gateway: Gateway
  let key: string
  const mariaDb = `sluice_schema_${randomBytes(4).toString("hex")}`

  beforeAll(async () => {
    gateway = await startApp()
    key = await localKey(gateway)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    if (hasMysql) {
      const admin = await mysql.createConnection({ uri: TEST_MYSQL_URL })
      await admin.query(`drop database if exists ${mariaDb}`)
      await admin.end()
    }
  })

  const api = (route: string) => request(gateway.url, route, { key })
  const connect = async (body: Record<string, unknown>) =>
    expect((await request(gateway.url, "/api/connections", { key, body })).status).toBe(201)

  it.skipIf(!hasMysql)("MariaDB: columns with comments, primary, unique and foreign keys, indexes, views, engine", async () => {
    const admin = await mysql.createConnection({ uri: TEST_MYSQL_URL, multipleStatements: true })
    await admin.query(`create database ${mariaDb}; use ${mariaDb};
      create table customers (id int primary key auto_increment, email varchar(200) not null unique comment 'contact address') comment 'who buys';
      create table orders (id bigint primary key, customer_id int not null, total decimal(10,2), key by_customer (customer_id),
        constraint orders_customer foreign key (customer_id) references customers (id)) engine=InnoDB;
      create view big_orders as select id, total from orders where total > 100;`)
    await admin.end()
    await connect(mysqlConnection("maria", mariaDb))
    const res = await api("/api/connections/maria/schema")
    expect(res.status, res.text).toBe(200)
    expect(res.json.tables.map((t: any) => `${t.schema}.${t.name}:${t.kind}`).sort()).toEqual(
      [`${mariaDb}.big_orders:view`, `${mariaDb}.customers:table`, `${mariaDb}.orders:table`].sort()
    )
    expect(tableOf(res.json, "customers")).toMatchObject({ comment: "who buys", primary_key: ["id"], unique_keys: [["email"]], engine: "InnoDB" })
    expect(tableOf(res.json, "customers").columns[1]).toMatchObject({ name: "email", type: "varchar(200)", nullable: false, comment: "contact address" })
    expect(tableOf(res.json, "orders")).toMatchObject({
      foreign_keys: [{ name: "orders_customer", columns: ["customer_id"], references: { schema: mariaDb, table: "customers", columns: ["id"] } }],
      indexes: [{ name: "by_customer", columns: ["customer_id"], unique: false, definition: null }]
    })
    expect(tableOf(res.json, "big_orders").definition).toContain("`total` > 100")
  })

  it("SQLite: tables, views, composite keys and a foreign key naming only its table", async () => {
    const file = path.join(gateway.dataDir, "shop.db")
    const db = new Database(file)
    db.exec(`create table customers (id integer primary key, email text not null);
      create table orders (id integer, line integer, customer_id integer references customers, note text default 'none', primary key (id, line));
      create unique index orders_note on orders (note, customer_id);
      create view recent as select * from orders;`)
    db.close()
    await connect({ name: "lite", db_type: "sqlite", database: file })
    const res = await api("/api/connections/lite/schema")
    expect(res.status, res.text).toBe(200)
    expect(res.json.tables.map((t: any) => `${t.name}:${t.kind}`)).toEqual(["customers:table", "orders:table", "recent:view"])
    expect(tableOf(res.json, "orders")).toMatchObject({
      primary_key: ["id", "line"],
      foreign_keys: [{ columns: ["customer_id"], references: { schema: "main", table: "customers", columns: ["id"] } }],
      indexes: [{ name: "orders_note", columns: ["note", "customer_id"], unique: true }]
    })
    expect(tableOf(res.json, "orders").columns.find((c: any) => c.name === "note")).toMatchObject({ type: "TEXT", default: "'none'", nullable: true })
    expect(tableOf(res.json, "recent").definition).toMatch(/^create view recent as select \* from orders$/i)
  })

  it("DuckDB: schemas, keys, comments and views from its own catalog", async () => {
    const file = path.join(gateway.dataDir, "shop.duckdb")
    const instance = await DuckDBInstance.create(file)
    const db = await instance.connect()
    await db.run(`create schema crm;
      create table crm.customers (id integer primary key, email varchar not null unique);
      comment on table crm.customers is 'who buys';
      create table crm.orders (id integer primary key, customer_id integer references crm.customers (id), total decimal(10, 2));
      create view crm.totals as select customer_id, sum(total) as total from crm.orders group by 1;`)
    db.closeSync()
    instance.closeSync()
    await connect({ name: "duck", db_type: "duckdb", database: file })
    const res = await api("/api/connections/duck/schema")
    expect(res.status, res.text).toBe(200)
    expect(res.json.tables.map((t: any) => `${t.schema}.${t.name}:${t.kind}`)).toEqual(["crm.customers:table", "crm.orders:table", "crm.totals:view"])
    expect(tableOf(res.json, "customers")).toMatchObject({ comment: "who buys", primary_key: ["id"], unique_keys: [["email"]] })
    expect(tableOf(res.json, "orders")).toMatchObject({
      foreign_keys: [{ columns: ["customer_id"], references: { schema: "crm", table: "customers", columns: ["id"] } }]
    })
    expect(tableOf(res.json, "orders").columns.map((c: any) => [c.name, c.type])).toEqual([
      ["id", "INTEGER"],
      ["customer_id", "INTEGER"],
      ["total", "DECIMAL(10,2)"]
    ])
  })

  it("search finds the tables that answer 20 questions over 200 tables: recall@5 of at least 0.9", async () => {
    const file = path.join(gateway.dataDir, "wide.db")
    const db = new Database(file)
    db.exec(RELEVANCE_TABLES_SQL.join("\n"))
    db.close()
    await connect({ name: "wide", db_type: "sqlite", database: file })
    expect((await api("/api/connections/wide/schema/overview")).json.table_count).toBe(200)
    let found = 0
    let wanted = 0
    const misses: Array<string> = []
    for (const { question, tables } of RELEVANCE_QUESTIONS) {
      const res = await api(`/api/connections/wide/schema/search?limit=5&q=${encodeURIComponent(question)}`)
      const top = res.json.tables.map((t: any) => t.table.replace(/^main\./, ""))
      for (const table of tables) {
        wanted++
        if (top.includes(table)) found++
        else misses.push(`${question} → ${table} (got ${top.join(", ")})`)
      }
    }
    const recall = found / wanted
    console.log(`schema search recall@5: ${recall.toFixed(3)} (${found}/${wanted})${misses.length ? `; missed: ${misses.join("; ")}` : ""}`)
    expect(recall).toBeGreaterThanOrEqual(0.9)
  })
})
