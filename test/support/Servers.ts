import { randomBytes } from "node:crypto"
import pg from "pg"
import Redis from "ioredis"

export const TEST_PG_URL = process.env["TEST_PG_URL"] ?? "postgres://root@127.0.0.1:5432/postgres"
export const TEST_REDIS_URL = process.env["TEST_REDIS_URL"] ?? "redis://127.0.0.1:6379"
const inCi = process.env["CI"] === "true"

/** Whether a real server answers; in CI a missing server fails the run instead of skipping. */
const available = async (name: string, probe: () => Promise<unknown>): Promise<boolean> => {
  try {
    await probe()
    return true
  } catch (error) {
    const reason = `${name} is not reachable (${(error as Error).message})`
    if (inCi) throw new Error(`${reason}: CI needs it; .ci/run starts it`)
    console.warn(`skipping ${name} tests: ${reason}`)
    return false
  }
}

export const postgresAvailable = () =>
  available("PostgreSQL", async () => {
    const client = new pg.Client({ connectionString: TEST_PG_URL, connectionTimeoutMillis: 3000 })
    await client.connect()
    await client.end()
  })

export const redisAvailable = () =>
  available("Redis", async () => {
    const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000 })
    try {
      await redis.connect()
      await redis.ping()
    } finally {
      redis.disconnect()
    }
  })

export const withAdminClient = async <A>(f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: TEST_PG_URL })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

/** `sql` in `database` of the test PostgreSQL, as its admin, on a session of its own. */
export const queryDatabase = async <R extends pg.QueryResultRow = any>(database: string, sql: string, params: Array<unknown> = []): Promise<Array<R>> => {
  const url = new URL(TEST_PG_URL)
  url.pathname = `/${database}`
  const client = new pg.Client({ connectionString: url.toString() })
  await client.connect()
  try {
    return (await client.query<R>(sql, params)).rows
  } finally {
    await client.end()
  }
}

/** Drops branch databases (and their roles, which share their names) a test or bench made: its own only, as other files run beside it. */
export const dropBranchDatabases = async (names: ReadonlyArray<string>) => {
  for (const name of names) {
    await queryDatabase("postgres", `drop database if exists "${name}" with (force)`).catch(() => undefined)
    await queryDatabase("postgres", `drop role if exists "${name}"`).catch(() => undefined)
  }
}

/** A fresh database on the test PostgreSQL; `drop` removes it, cutting off any sessions left. */
export const createTestDatabase = async () => {
  const name = `sluice_t_${randomBytes(6).toString("hex")}`
  await withAdminClient((c) => c.query(`create database ${name}`))
  const url = new URL(TEST_PG_URL)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    query: <R extends pg.QueryResultRow = any>(text: string, params: Array<unknown> = []) => queryDatabase<R>(name, text, params),
    drop: () => withAdminClient((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined)
  }
}
export type TestDatabase = Awaited<ReturnType<typeof createTestDatabase>>

export const TEST_MYSQL_URL = process.env["TEST_MYSQL_URL"] ?? "mysql://root@127.0.0.1:3306/test"

/** A `mysql` connection body for the test server (database from TEST_MYSQL_URL unless given). */
export const mysqlConnection = (name: string, database?: string) => {
  const url = new URL(TEST_MYSQL_URL)
  return {
    name,
    db_type: "mysql",
    host: url.hostname,
    port: Number(url.port || 3306),
    database: database ?? url.pathname.slice(1),
    username: decodeURIComponent(url.username)
  }
}

/**
 * A fresh database on the test MariaDB holding `big` (ids 1 to 900: its cross joins make statements
 * as long as a test needs), with an admin connection to it; `drop` removes it.
 */
export const createMariaDatabase = async (prefix: string) => {
  const mysql = await import("mysql2/promise")
  const name = `${prefix}_${randomBytes(4).toString("hex")}`
  const admin = await mysql.createConnection({ uri: TEST_MYSQL_URL })
  await admin.query(`create database ${name}`)
  await admin.query(`create table ${name}.big (id int)`)
  await admin.query(`insert into ${name}.big with recursive s(n) as (select 1 union all select n + 1 from s where n < 900) select n from s`)
  return {
    name,
    admin,
    /** KILL CONNECTION on every session using the database, as a DBA would. */
    killSessions: async () => {
      const [rows] = (await admin.query("select id from information_schema.processlist where db = ? and id <> connection_id()", [name])) as unknown as [
        Array<{ id: number }>
      ]
      for (const row of rows) await admin.query(`kill connection ${Number(row.id)}`).catch(() => undefined)
    },
    drop: async () => {
      await admin.query(`drop database if exists ${name}`)
      await admin.end()
    }
  }
}
export type MariaDatabase = Awaited<ReturnType<typeof createMariaDatabase>>

export const mysqlAvailable = () =>
  available("MariaDB/MySQL", async () => {
    const mysql = await import("mysql2/promise")
    const connection = await mysql.createConnection({ uri: TEST_MYSQL_URL, connectTimeout: 3000 })
    await connection.end()
  })

/** No SQL Server runs on these machines: the MSSQL live suite runs only when this is set (mssql://user:password@host:port/database, `?tls=require` for an encrypted server). */
export const TEST_MSSQL_URL = process.env["TEST_MSSQL_URL"]

/** No Databricks workspace either: its live suite runs only when all three are set. */
export const TEST_DATABRICKS_HOST = process.env["TEST_DATABRICKS_HOST"]
export const TEST_DATABRICKS_HTTP_PATH = process.env["TEST_DATABRICKS_HTTP_PATH"]
export const TEST_DATABRICKS_TOKEN = process.env["TEST_DATABRICKS_TOKEN"]
