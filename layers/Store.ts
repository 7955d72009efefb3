import { Migrator, SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import { migrations } from "../src/migrations"
import { AppConfig } from "./AppConfig"
import { startEmbeddedStore } from "./EmbeddedStore"
import { createJobTables } from "./JobRuntime"
import { RUNNER_ADDRESS, storeSessionName } from "./RunnerIdentity"
import { acquireStorePool, type StatementDeadline, StorePool } from "./StorePool"

const MIGRATIONS_TABLE = "effect_sql_migrations"
const MIGRATION_LOCK_KEY = 0x5_1ce_0001
const JOB_TABLES_LOCK_KEY = 0x5_1ce_0002

/** Forward-only; an advisory lock serialises replicas that start together. */
export const runMigrations = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const migrate = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: MIGRATIONS_TABLE })
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      yield* sql`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`
      yield* sql`create table if not exists ${sql(MIGRATIONS_TABLE)} (
        migration_id integer primary key,
        created_at timestamptz not null default now(),
        name text not null
      )`
      return yield* migrate
    })
  )
})

/**
 * The job runtime's tables, created by one replica at a time. The cluster's storages create them
 * when built and ignore some of their own statements' failures, so this runs outside a transaction,
 * under a session lock: replicas starting together otherwise race in PostgreSQL's catalog.
 */
const createJobTablesOnce = Effect.scoped(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const lockHolder = yield* sql.reserve
    yield* lockHolder.executeRaw("select pg_advisory_lock($1)", [JOB_TABLES_LOCK_KEY])
    yield* Effect.addFinalizer(() => Effect.ignore(lockHolder.executeRaw("select pg_advisory_unlock($1)", [JOB_TABLES_LOCK_KEY])))
    yield* createJobTables
  })
)

/**
 * DATABASE_URL → that PostgreSQL, where every wait for a connection, connect and statement ends
 * within SP_STORE_TIMEOUT_SECONDS once migrations are done; unset → PGlite in this process behind a
 * private unix socket (it cannot stall apart from the process, so no deadline cuts its statements).
 */
export const StoreLive = Layer.unwrapScoped(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) {
      const deadline: StatementDeadline = { millis: undefined }
      const pool = yield* acquireStorePool({
        url: Redacted.value(config.databaseUrl.value),
        maxConnections: config.storePoolSize,
        applicationName: storeSessionName(RUNNER_ADDRESS),
        deadline,
        connectMillis: config.storeTimeoutSeconds * 1000
      })
      const client = PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: storeSessionName(RUNNER_ADDRESS) })
      const migrated = runMigrations.pipe(
        Effect.zipRight(createJobTablesOnce),
        Effect.zipRight(Effect.sync(() => (deadline.millis = config.storeTimeoutSeconds * 1000)))
      )
      return Layer.effectDiscard(migrated).pipe(Layer.provideMerge(Layer.merge(client, Layer.succeed(StorePool, pool))))
    }
    const store = yield* startEmbeddedStore(config.dataDir)
    // PGlite runs one statement at a time; one client connection keeps protocol messages from interleaving.
    const pool = yield* acquireStorePool({
      socket: { dir: store.socketDir, port: store.port, user: "postgres", database: "postgres" },
      maxConnections: 1,
      applicationName: "sluice",
      deadline: { millis: undefined },
      // 0: waits for the one connection as long as it takes, as statements on it do.
      connectMillis: 0
    })
    const client = PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "sluice" })
    return Layer.effectDiscard(runMigrations).pipe(Layer.provideMerge(Layer.merge(client, Layer.succeed(StorePool, pool))))
  })
)
