import { ShardingConfig, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { tempDataDir } from "../support/Gateway"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const skip = !(await postgresAvailable())

// What each replica's job runtime builds at start: the cluster's storages, which create their tables when missing.
const jobStorages = Layer.mergeAll(SqlMessageStorage.layerWith({ prefix: "sluice_jobs" }), SqlRunnerStorage.layerWith({ prefix: "sluice_jobs" })).pipe(
  Layer.provide(ShardingConfig.layer())
)

describe("the job runtime's tables on a PostgreSQL store", () => {
  it.skipIf(skip)("are created by the store, one replica at a time, so replicas starting together do not race in the catalog", async () => {
    for (let round = 0; round < 4; round++) {
      const db = await createTestDatabase()
      try {
        const env = ConfigProvider.fromMap(new Map([["DATABASE_URL", db.url], ["SP_DATA_DIR", tempDataDir()]]))
        const config = AppConfig.Default.pipe(Layer.provide(Layer.setConfigProvider(env)))
        await Effect.runPromise(Effect.scoped(Layer.build(StoreLive.pipe(Layer.provide(config)))))
        const replica = () => Effect.runPromise(Effect.scoped(Layer.build(jobStorages)).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(db.url) }))))
        const started = await Promise.allSettled([replica(), replica(), replica()])
        expect(started.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "fulfilled"])
      } finally {
        await db.drop()
      }
    }
  }, 60_000)
})
