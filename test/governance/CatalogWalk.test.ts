import { DuckDBInstance } from "@duckdb/node-api"
import Database from "better-sqlite3"
import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DbType } from "../../src/domain/Connection"
import { DUCKDB_FUNCTIONS, DUCKDB_HARMLESS_VOLATILE } from "../../src/governance/sqlguard/functions/Duckdb"
import { POSTGRES_FUNCTIONS, POSTGRES_HARMLESS_VOLATILE } from "../../src/governance/sqlguard/functions/Postgres"
import { SQLITE_FUNCTIONS, SQLITE_HARMLESS_VOLATILE } from "../../src/governance/sqlguard/functions/Sqlite"
import { STANDARD_FUNCTIONS } from "../../src/governance/sqlguard/functions/Standard"
import { SqlGuard } from "../../src/governance/sqlguard/SqlGuard"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))
const skipPostgres = !(await postgresAvailable())
const STANDARD = new Set<string>(STANDARD_FUNCTIONS)

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`
/** Whether the guard lets a call of this function through, as written with these name parts. */
const allows = (dbType: DbType, parts: ReadonlyArray<string>) => Either.isRight(guard.check(`select ${parts.map(quoted).join(".")}()`, dbType))

/**
 * The engines' own catalogs against the reviewed allow-lists: every function the guard lets
 * through is on the list, no reviewed name is a typo, and none the engine calls volatile is
 * allowed unless it is one of the few whose only effect is a new random value or time.
 */
describe("the function allow-lists against the engines' catalogs", () => {
  let database: TestDatabase

  beforeAll(async () => {
    if (skipPostgres) return
    database = await createTestDatabase()
    await database.query("create extension dblink; create extension tablefunc")
  })
  afterAll(async () => {
    await database?.drop()
  })

  it.skipIf(skipPostgres)("PostgreSQL: pg_proc, extensions (dblink, tablefunc) included", async () => {
    const procs = await database.query<{ schema: string; name: string; volatile: boolean }>(
      "select n.nspname as schema, p.proname as name, bool_or(p.provolatile = 'v') as volatile from pg_proc p join pg_namespace n on n.oid = p.pronamespace group by 1, 2"
    )
    const reviewed = new Set(POSTGRES_FUNCTIONS)
    const allowedUnreviewed = procs.filter((p) => (allows("postgresql", [p.name]) || allows("postgresql", [p.schema, p.name])) && !reviewed.has(p.name))
    expect(allowedUnreviewed.map((p) => `${p.schema}.${p.name}`)).toEqual([])

    const builtins = new Map(procs.filter((p) => p.schema === "pg_catalog").map((p) => [p.name, p]))
    expect(POSTGRES_FUNCTIONS.filter((name) => !builtins.has(name) && !STANDARD.has(name)), "reviewed names pg_catalog lacks").toEqual([])
    const harmless = new Set(POSTGRES_HARMLESS_VOLATILE)
    expect(POSTGRES_FUNCTIONS.filter((name) => builtins.get(name)?.volatile === true && !harmless.has(name)), "volatile").toEqual([])

    const extensionFunctions = procs.filter((p) => p.schema === "public").map((p) => p.name)
    expect(extensionFunctions).toEqual(expect.arrayContaining(["dblink_exec", "crosstab", "connectby"]))
    expect(extensionFunctions.filter((name) => allows("postgresql", [name]) || allows("postgresql", ["public", name]))).toEqual([])
  })

  it("DuckDB: duckdb_functions()", async () => {
    const duck = await DuckDBInstance.create(":memory:")
    const connection = await duck.connect()
    const rows = (
      await connection.runAndReadAll("select function_name, bool_or(stability = 'VOLATILE') from duckdb_functions() group by 1")
    ).getRows() as Array<[string, boolean]>
    connection.closeSync()
    duck.closeSync()
    const reviewed = new Set(DUCKDB_FUNCTIONS)
    const known = new Map(rows)
    expect(rows.filter(([name]) => /^\w+$/.test(name) && allows("duckdb", [name]) && !reviewed.has(name)).map(([name]) => name)).toEqual([])
    // COLUMNS(…) is a star expression written as a call.
    expect(DUCKDB_FUNCTIONS.filter((name) => !known.has(name) && !STANDARD.has(name) && name !== "columns"), "reviewed names DuckDB lacks").toEqual([])
    const harmless = new Set(DUCKDB_HARMLESS_VOLATILE)
    expect(DUCKDB_FUNCTIONS.filter((name) => known.get(name) === true && !harmless.has(name)), "volatile").toEqual([])
  })

  it("SQLite: pragma_function_list and the table-valued modules", () => {
    const db = new Database(":memory:")
    const functions = db.prepare("select name, max(flags & 0x800) as deterministic, max(type) as type from pragma_function_list group by name").all() as Array<{
      name: string
      deterministic: number
      type: string
    }>
    const tableValued = (name: string) => Either.isRight(Either.try(() => db.prepare(`select * from ${name}('[]')`)))
    const lacking = SQLITE_FUNCTIONS.filter((name) => !functions.some((f) => f.name === name) && !tableValued(name) && name !== "cast")
    db.close()
    const reviewed = new Set(SQLITE_FUNCTIONS)
    const known = new Map(functions.map((f) => [f.name, f]))
    expect(functions.filter((f) => /^\w+$/.test(f.name) && allows("sqlite", [f.name]) && !reviewed.has(f.name)).map((f) => f.name)).toEqual([])
    expect(lacking, "reviewed names SQLite lacks").toEqual([])
    const harmless = new Set(SQLITE_HARMLESS_VOLATILE)
    // Aggregates and window functions are never flagged deterministic; only scalar ones say so.
    const volatile = SQLITE_FUNCTIONS.filter((name) => known.get(name)?.type === "s" && known.get(name)?.deterministic === 0 && !harmless.has(name))
    expect(volatile, "volatile").toEqual([])
  })
})
