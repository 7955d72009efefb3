import * as path from "node:path"
import { DuckDBInstance } from "@duckdb/node-api"
import Database from "better-sqlite3"
import mysql from "mysql2/promise"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DbType } from "../../src/domain/Connection"
import { DIALECT_ATTACKS, GENERIC_ATTACKS } from "../governance/corpus/Attacks"
import { READS } from "../governance/corpus/Reads"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request } from "../support/Http"
import { ORDERS } from "../support/PiiCopies"
import { createTestDatabase, mysqlAvailable, mysqlConnection, postgresAvailable, TEST_MYSQL_URL, type TestDatabase } from "../support/Servers"

const servers = { postgres: await postgresAvailable(), mysql: await mysqlAvailable() }
const skip = !servers.postgres || !servers.mysql
const MYSQL_DATABASE = "sluice_corpus"

const CUSTOMERS = [
  [1, "Ada", "ada@example.com", "FR"],
  [2, "Bo", "bo@example.com", "DE"],
  [3, "Cy", "cy@example.com", "US"]
] as const
const CANARY = [
  [1, "canary one"],
  [2, "canary two"]
] as const

const values = (rows: ReadonlyArray<ReadonlyArray<string | number>>) =>
  rows.map((row) => `(${row.map((v) => (typeof v === "number" ? String(v) : `'${v}'`)).join(", ")})`).join(", ")
const inserts = [
  `insert into orders values ${values(ORDERS)}`,
  `insert into customers values ${values(CUSTOMERS)}`,
  `insert into canary values ${values(CANARY)}`
]

/**
 * The corpus through a running gateway, on real engines whose connections could write (superuser on
 * PostgreSQL, root on MariaDB): every read answers 200, every attack 400 query_blocked, and the
 * canary table and the list of tables are exactly as before.
 */
describe("the read-only corpus against real PostgreSQL, MariaDB, SQLite and DuckDB", () => {
  let gateway: Gateway
  let key: string
  let pgDatabase: TestDatabase
  let maria: mysql.Connection
  const sqliteFile = () => path.join(gateway.dataDir, "corpus.sqlite")
  const duckFile = () => path.join(gateway.dataDir, "corpus.duckdb")

  const fingerprints: Record<string, () => Promise<string>> = {
    postgresql: async () =>
      JSON.stringify([
        await pgDatabase.query("select id, secret from canary order by id"),
        await pgDatabase.query("select table_name from information_schema.tables where table_schema = 'public' order by 1")
      ]),
    mysql: async () => {
      const [canary] = await maria.query(`select id, secret from ${MYSQL_DATABASE}.canary order by id`)
      const [tables] = await maria.query(`select table_name from information_schema.tables where table_schema = ? order by 1`, [MYSQL_DATABASE])
      return JSON.stringify([canary, tables])
    },
    sqlite: async () => {
      const db = new Database(sqliteFile(), { readonly: true })
      const result = JSON.stringify([db.prepare("select id, secret from canary order by id").all(), db.prepare("select name from sqlite_master order by 1").all()])
      db.close()
      return result
    },
    duckdb: async () => {
      const duck = await DuckDBInstance.create(duckFile(), { access_mode: "READ_ONLY" })
      const connection = await duck.connect()
      const canary = (await connection.runAndReadAll("select id, secret from canary order by id")).getRows()
      const tables = (await connection.runAndReadAll("select table_name from information_schema.tables order by 1")).getRows()
      connection.closeSync()
      duck.closeSync()
      return JSON.stringify([canary, tables], (_, v) => (typeof v === "bigint" ? Number(v) : v))
    }
  }

  beforeAll(async () => {
    if (skip) return
    gateway = await startApp({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "100000", SP_PER_KEY_RPM: "100000" } })
    key = await localKey(gateway)
    const api = (route: string, body: unknown) => request(gateway.url, route, { key, body })

    pgDatabase = await createTestDatabase()
    await pgDatabase.query(`create extension dblink; create extension tablefunc;
      create table orders (id int primary key, customer_id int, total numeric, status text, created_at timestamp, payload jsonb);
      create table customers (id int primary key, name text, email text, country text);
      create table canary (id int primary key, secret text);
      create index canary_idx on canary using brin (id);
      create sequence seq`)
    for (const sql of inserts) await pgDatabase.query(sql)

    maria = await mysql.createConnection({ uri: TEST_MYSQL_URL, multipleStatements: true })
    await maria.query(`drop database if exists ${MYSQL_DATABASE}; create database ${MYSQL_DATABASE}; use ${MYSQL_DATABASE};
      create table orders (id int primary key, customer_id int, total decimal(10,2), status varchar(20), created_at datetime, payload json);
      create table customers (id int primary key, name varchar(50), email varchar(100), country varchar(2));
      create table canary (id int primary key, secret varchar(50));`)
    for (const sql of inserts) await maria.query(sql)

    const lite = new Database(sqliteFile())
    lite.exec(`create table orders (id integer primary key, customer_id integer, total real, status text, created_at text, payload text);
      create table customers (id integer primary key, name text, email text, country text);
      create table canary (id integer primary key, secret text);`)
    for (const sql of inserts) lite.exec(sql)
    lite.close()

    const duck = await DuckDBInstance.create(duckFile())
    const connection = await duck.connect()
    await connection.run(`create table orders (id integer, customer_id integer, total double, status varchar, created_at timestamp, payload json);
      create table customers (id integer, name varchar, email varchar, country varchar);
      create table canary (id integer, secret varchar);`)
    for (const sql of inserts) await connection.run(sql)
    connection.closeSync()
    duck.closeSync()

    const connections = [
      { name: "pg", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: pgDatabase.name, username: "root" },
      mysqlConnection("maria", MYSQL_DATABASE),
      { name: "lite", db_type: "sqlite", database: sqliteFile() },
      { name: "duck", db_type: "duckdb", database: duckFile() }
    ]
    for (const connection of connections) expect((await api("/api/connections", connection)).status).toBe(201)
  })
  afterAll(async () => {
    await gateway?.stop()
    await pgDatabase?.drop()
    await maria?.query(`drop database if exists ${MYSQL_DATABASE}`)
    await maria?.end()
  })

  const engines: ReadonlyArray<[DbType, string]> = [
    ["postgresql", "pg"],
    ["mysql", "maria"],
    ["sqlite", "lite"],
    ["duckdb", "duck"]
  ]

  for (const [dbType, connection] of engines) {
    it.skipIf(skip)(`${dbType}: every read answers, every attack is refused, and the canary is untouched`, { timeout: 180_000 }, async () => {
      const before = await fingerprints[dbType]!()
      const failedReads: Array<string> = []
      for (const sql of READS[dbType]) {
        const result = await request(gateway.url, "/api/query", { key, body: { connection_name: connection, sql } })
        if (result.status !== 200) failedReads.push(`${sql}  →  ${result.status} ${result.json?.code}: ${result.json?.message}`)
      }
      const missed: Array<string> = []
      for (const sql of [...GENERIC_ATTACKS, ...DIALECT_ATTACKS[dbType]]) {
        const result = await request(gateway.url, "/api/query", { key, body: { connection_name: connection, sql } })
        if (result.status !== 400 || result.json?.code !== "query_blocked") missed.push(`${sql}  →  ${result.status} ${result.json?.code}`)
      }
      expect(failedReads, "reads that did not answer").toEqual([])
      expect(missed, "attacks not refused").toEqual([])
      expect(await fingerprints[dbType]!()).toBe(before)
    })
  }
})
