import { createHmac, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { DuckDBInstance } from "@duckdb/node-api"
import Database from "better-sqlite3"
import mysql from "mysql2/promise"
import { createTestDatabase, TEST_MYSQL_URL, type TestDatabase } from "./Servers"

/**
 * Two copies of one shop on each of PostgreSQL, MariaDB, SQLite and DuckDB that differ only in what
 * the PII rules hide: `redact` and `drop` columns entirely (nulls included), `mask` columns in all
 * but their last four characters, `hash` columns value for value (the same values equal, the same
 * nulls, and, since the test knows the key, hashes that start alike, so they order and compare to
 * short constants alike: an HMAC's characters say nothing of the value, but differ with it).
 * Whatever a statement returns through the gateway must be the same on both copies.
 */
export type Engine = "postgresql" | "mysql" | "sqlite" | "duckdb"
export type Copy = "a" | "b"

export const PII_RULES = [
  { table: "customers", column: "email", action: "mask" },
  { table: "customers", column: "ssn", action: "redact" },
  { table: "customers", column: "phone", action: "hash" },
  { table: "customers", column: "income", action: "redact" },
  { table: "customers", column: "birth", action: "drop" },
  { table: "customers_part", column: "email", action: "mask" },
  { table: "visits", column: "birth", action: "drop" },
  { table: "customer_keys", column: "email", action: "mask" },
  { table: "signups", column: "email", action: "mask" },
  { table: "signups", column: "ssn", action: "redact" },
  { table: "members", column: "handle", action: "mask" }
] as const
export const BLOCKED = ["secret_salaries"]

interface Person {
  readonly id: number
  readonly name: string
  readonly country: string
  readonly email: string | null
  readonly ssn: string | null
  readonly phone: string | null
  readonly income: number | null
  readonly birth: string | null
}

const PEOPLE_A: ReadonlyArray<Person> = [
  { id: 1, name: "Ada", country: "FR", email: "alice.smith@example.com", ssn: "123-45-6789", phone: "+1 555 0100", income: 91000, birth: "1980-01-01" },
  { id: 2, name: "Bo", country: "DE", email: "bo@example.org", ssn: null, phone: "+1 555 0101", income: null, birth: "1990-02-02" },
  { id: 3, name: "Cy", country: "US", email: "c@example.net", ssn: "987-65-4321", phone: "+1 555 0100", income: 12, birth: null },
  { id: 4, name: "Di", country: "FR", email: null, ssn: "555-55-5555", phone: null, income: 45000, birth: "2000-03-03" },
  { id: 5, name: "Ed", country: "DE", email: "z@x.io", ssn: "000-11-2222", phone: "+1 555 0199", income: 7, birth: "1970-12-31" }
]

/** Copy b: emails keep their last four characters, phones map one for one in hash order, the rest differs whole. */
const peopleB = (hashKey: Buffer): ReadonlyArray<Person> => {
  // Seven characters or fewer show the fill alone: any such value stands for any other.
  const emails = ["q@other.com", "robert.long@z.org", "xyzzy-mail@mail.net", null, "ab@c.de"]
  const ssns = ["999-99-9999", "111-11-1111", null, "x", "222"]
  const incomes = [5, 800000, null, 1, 99]
  const births = [null, "1955-05-05", "2011-11-11", "1999-09-09", "1990-01-01"]
  const hash = (value: string) => createHmac("sha256", hashKey).update(value).digest("hex")
  // Each phone of b hashes to the same first four hex digits as its phone of a: hashes order and compare to short constants alike.
  const twin = new Map<string, string>()
  for (const phone of new Set(PEOPLE_A.flatMap((p) => (p.phone === null ? [] : [p.phone])))) {
    const prefix = hash(phone).slice(0, 4)
    let n = 0
    while (hash(`+44 20 ${n}`).slice(0, 4) !== prefix) n++
    twin.set(phone, `+44 20 ${n}`)
  }
  const phoneOf = (phone: string | null) => (phone === null ? null : twin.get(phone)!)
  return PEOPLE_A.map((p, i) => ({ ...p, email: emails[i]!, ssn: ssns[i]!, income: incomes[i]!, birth: births[i]!, phone: phoneOf(p.phone) }))
}

/** The orders every shop fixture holds (the guard's corpus reads them). */
export const ORDERS = [
  [1, 1, 12.5, "paid", "2024-01-05 10:00:00", '{"channel":"web","meta":{"source":"ad"}}'],
  [2, 1, 80, "open", "2024-02-11 09:30:00", '{"channel":"app"}'],
  [3, 2, 150, "paid", "2024-02-20 17:45:00", '{"channel":"web"}'],
  [4, 3, 5, "", "2024-03-01 08:00:00", '{"channel":"store"}']
] as const

const literal = (v: string | number | null) => (v === null ? "null" : typeof v === "number" ? String(v) : `'${v}'`)
const rowsOf = (rows: ReadonlyArray<ReadonlyArray<string | number | null>>) => rows.map((r) => `(${r.map(literal).join(", ")})`).join(", ")

/** The same statements create each copy; types differ per engine. */
const schemaSql = (engine: Engine, people: ReadonlyArray<Person>) => {
  const text = engine === "mysql" ? "varchar(100)" : engine === "duckdb" ? "varchar" : "text"
  const json = engine === "postgresql" ? "jsonb" : engine === "mysql" ? "json" : engine === "duckdb" ? "json" : "text"
  const timestamp = engine === "mysql" ? "datetime" : engine === "sqlite" ? "text" : "timestamp"
  const date = engine === "sqlite" ? "text" : "date"
  const customers = people.map((p) => [p.id, p.name, p.country, p.email, p.ssn, p.phone, p.income, p.birth])
  return [
    `create table customers (id int primary key, name ${text}, country ${text}, email ${text}, ssn ${text}, phone ${text}, income numeric(12, 2), birth ${date})`,
    `insert into customers values ${rowsOf(customers)}`,
    `create table orders (id int primary key, customer_id int, total numeric(10, 2), status ${text}, created_at ${timestamp}, payload ${json})`,
    `insert into orders values ${rowsOf(ORDERS)}`,
    `create table canary (id int primary key, secret ${text})`,
    `insert into canary values (1, 'canary one'), (2, 'canary two')`,
    `create table secret_salaries (who ${text}, salary int)`,
    `insert into secret_salaries values ('chief-exec-zq', 999999)`,
    `create table big (id int primary key)`,
    `insert into big ${engine === "postgresql" ? "select generate_series(1, 300)" : engine === "duckdb" ? "select range from range(1, 301)" : "with recursive s(n) as (select 1 union all select n + 1 from s where n < 300) select n from s"}`,
    `create view v_customers as select id, name, email, ssn, phone from customers`,
    // Views a DBA redefines after the scan (a test does).
    `create view v_safe as select id, name from customers`,
    `create view v_plain as select id, total from orders`,
    // Columns the engine computes from a masked one, which the catalog gives as their default.
    `create table customer_keys (id int primary key, email ${text}, email_lc ${text} generated always as (lower(email))${engine === "postgresql" ? " stored" : ""}, email_len int generated always as (length(email))${engine === "postgresql" ? " stored" : ""})`,
    `insert into customer_keys (id, email) select id, email from customers`,
    // Stored in the order of a masked column, with an index on another: the order rows are read in follows masked values.
    `create table signups (id int primary key, country ${text}, email ${text}, ssn ${text})`,
    `insert into signups select id, country, email, ssn from customers order by ssn`,
    `create index signups_email on signups (email)`,
    // Keyed by a masked column: InnoDB and SQLite (WITHOUT ROWID) store rows in its order.
    `create table members (handle ${text} primary key, id int, country ${text})${engine === "sqlite" ? " without rowid" : ""}`,
    `insert into members select coalesce(email, 'none'), id, country from customers`,
    ...(engine === "postgresql"
      ? [
          "create table customers_part (id int, email text) partition by range (id)",
          "create table customers_part_1 partition of customers_part for values from (1) to (100)",
          `insert into customers_part select id, email from customers`,
          "create table visits (id int, birth date) partition by range (birth)",
          "create table visits_old partition of visits for values from (minvalue) to ('1985-01-01')",
          "create table visits_new partition of visits for values from ('1985-01-01') to (maxvalue)",
          "create table visits_none partition of visits default",
          "insert into visits select id, birth from customers"
        ]
      : [])
  ]
}

export interface CopyOf {
  readonly engine: Engine
  readonly copy: Copy
  /** The connection body to create it with. */
  readonly connection: Record<string, unknown>
  /** The MariaDB database's name, which statements and errors name; the same placeholder on both copies. */
  readonly database: string
}

export interface PiiCopies {
  readonly copies: ReadonlyArray<CopyOf>
  readonly dir: string
  /** Runs statements on a copy as its owner would (PostgreSQL, MariaDB and SQLite; the gateway holds DuckDB's file). */
  readonly exec: (copy: CopyOf, sql: string) => Promise<void>
  readonly drop: () => Promise<void>
}

/** A folder for the copies' files, to allow in SP_LOCAL_DB_DIRS before the gateway starts. */
export const piiCopiesDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "sluice-pii-"))

/** Both copies on every engine; SQLite and DuckDB files under `dir`, each copy in its own folder so DuckDB names both catalogs `duck`. */
export const createPiiCopies = async (hashKey: Buffer, dir: string): Promise<PiiCopies> => {
  const people = { a: PEOPLE_A, b: peopleB(hashKey) }
  const copies: Array<CopyOf> = []
  const pgs: Array<TestDatabase> = []
  const maria = await mysql.createConnection({ uri: TEST_MYSQL_URL, multipleStatements: true })
  const marias: Array<string> = []
  for (const copy of ["a", "b"] as const) {
    const pg = await createTestDatabase()
    pgs.push(pg)
    for (const sql of schemaSql("postgresql", people[copy])) await pg.query(sql)
    await pg.query("analyze")
    copies.push({ engine: "postgresql", copy, database: pg.name, connection: { db_type: "postgresql", host: "127.0.0.1", port: 5432, database: pg.name, username: "root" } })

    const db = `sluice_pii_${copy}_${randomBytes(3).toString("hex")}`
    marias.push(db)
    await maria.query(`create database ${db}; use ${db}; ${schemaSql("mysql", people[copy]).join(";\n")}`)
    const url = new URL(TEST_MYSQL_URL)
    copies.push({ engine: "mysql", copy, database: db, connection: { db_type: "mysql", host: url.hostname, port: Number(url.port || 3306), database: db, username: decodeURIComponent(url.username) } })

    fs.mkdirSync(path.join(dir, copy))
    const liteFile = path.join(dir, copy, "shop.sqlite")
    const lite = new Database(liteFile)
    lite.exec(schemaSql("sqlite", people[copy]).join(";\n"))
    lite.close()
    copies.push({ engine: "sqlite", copy, database: "shop", connection: { db_type: "sqlite", database: liteFile } })

    const duckFile = path.join(dir, copy, "duck.duckdb")
    const duck = await DuckDBInstance.create(duckFile)
    const connection = await duck.connect()
    for (const sql of schemaSql("duckdb", people[copy])) await connection.run(sql)
    connection.closeSync()
    duck.closeSync()
    copies.push({ engine: "duckdb", copy, database: "duck", connection: { db_type: "duckdb", database: duckFile } })
  }
  return {
    copies,
    dir,
    exec: async (copy, sql) => {
      if (copy.engine === "postgresql") await pgs.find((pg) => pg.name === copy.database)!.query(sql)
      else if (copy.engine === "mysql") await maria.query(`use ${copy.database}; ${sql}`)
      else if (copy.engine === "sqlite") {
        const lite = new Database(copy.connection["database"] as string)
        lite.exec(sql)
        lite.close()
      } else throw new Error(`${copy.engine}: not while the gateway holds the file`)
    },
    drop: async () => {
      for (const pg of pgs) await pg.drop()
      for (const db of marias) await maria.query(`drop database if exists ${db}`)
      await maria.end()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** Raw values of copy a that no answer may hold, in any form the probes could spell them. */
export const RAW_FRAGMENTS = ["alice.smith", "example.com", "z@x.io", "x.io", "123-45-6789", "987-65", "555-55", "+1 555", "91000", "1980-01-01", "999999", "chief-exec"]
