import { afterAll, describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { JobStepsRepo } from "../../src/repos/JobStepsRepo"
import { tempDataDir } from "../support/Gateway"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const database = hasPostgres ? await createTestDatabase() : undefined
afterAll(() => database?.drop())

const storeOn = (env: Record<string, string>) =>
  JobStepsRepo.Default.pipe(
    Layer.provideMerge(StoreLive),
    Layer.provide(AppConfig.Default),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )

const stores = [
  { name: "embedded", env: { SP_DATA_DIR: tempDataDir() }, skip: false },
  { name: "postgresql", env: { DATABASE_URL: database?.url ?? "" }, skip: !hasPostgres }
]

for (const store of stores) {
  describe.skipIf(store.skip)(`job step records on the ${store.name} store`, () => {
    layer(storeOn(store.env), { timeout: 120_000, excludeTestServices: true })((it) => {
      it.effect("the sweep deletes the records no step reads again (done an hour ago, claimed and left for a day), and only those", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const repo = yield* JobStepsRepo
          yield* sql`insert into job_steps (job_id, step, runner, heartbeat_at, done_at, result) values
            ('old-done', 'model/1', 'r', now() - interval '2 hours', now() - interval '2 hours', '1'),
            ('new-done', 'model/1', 'r', now() - interval '10 minutes', now() - interval '10 minutes', '1'),
            ('left', 'model/1', 'r', now() - interval '2 days', null, null),
            ('waiting', 'model/1', 'r', now() - interval '2 hours', null, null),
            ('running', 'model/1', 'r', now(), null, null)`
          yield* repo.sweep
          const left = yield* sql<{ job_id: string }>`select job_id from job_steps order by job_id`
          expect(left.map((row) => row.job_id)).toEqual(["new-done", "running", "waiting"])
        })
      )
    })
  })
}
