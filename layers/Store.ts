import { Migrator, SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option } from "effect"
import { migrations } from "../src/migrations"
import { AppConfig } from "./AppConfig"
import { startEmbeddedStore } from "./EmbeddedStore"

const MIGRATIONS_TABLE = "effect_sql_migrations"
const MIGRATION_LOCK_KEY = 0x5_1ce_0001

/** DATABASE_URL → that PostgreSQL; unset → PGlite in this process behind a private unix socket. */
const ClientLive = Layer.unwrapScoped(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) {
      return PgClient.layer({
        url: config.databaseUrl.value,
        maxConnections: config.storePoolSize,
        idleTimeout: "60 seconds",
        applicationName: "sluice"
      })
    }
    const store = yield* startEmbeddedStore(config.dataDir)
    // PGlite runs one statement at a time; one client connection keeps protocol messages from interleaving.
    return PgClient.layer({
      host: store.socketDir,
      port: store.port,
      username: "postgres",
      database: "postgres",
      maxConnections: 1,
      applicationName: "sluice"
    })
  })
)

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

export const StoreLive = Layer.effectDiscard(runMigrations).pipe(Layer.provideMerge(ClientLive))
