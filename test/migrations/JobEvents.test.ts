import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Migrator, SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { startEmbeddedStore } from "../../layers/EmbeddedStore"
import { OrgId } from "../../src/domain/Ids"
import { migrations } from "../../src/migrations"
import { tenantScope } from "../../src/repos/Tenant"
import { createTestDatabase, postgresAvailable } from "../support/Servers"
import { initialisedStoreDir } from "../support/template"

const hasPostgres = await postgresAvailable()
const database = hasPostgres ? await createTestDatabase() : undefined
afterAll(() => database?.drop())

const BEFORE_JOB_EVENTS = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0023_job_events"))
const migrateWith = (record: Record<string, Effect.Effect<unknown, unknown, SqlClient.SqlClient>>) =>
  Migrator.make({})({ loader: Migrator.fromRecord(record), table: "effect_sql_migrations" })

/** A store no migration has touched: a fresh PostgreSQL database, or an embedded store in a new data dir. */
const unmigrated = {
  postgresql: () => PgClient.layer({ url: Redacted.make(database!.url) }),
  embedded: () =>
    Layer.unwrapScoped(
      Effect.gen(function* () {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-"))
        if (fs.existsSync(initialisedStoreDir())) fs.cpSync(initialisedStoreDir(), path.join(dataDir, "pgdata"), { recursive: true })
        const store = yield* startEmbeddedStore(dataDir)
        return PgClient.layer({ host: store.socketDir, port: store.port, username: "postgres", database: "postgres", maxConnections: 1 })
      })
    )
} as const

const A = OrgId.make("org_a")
const B = OrgId.make("org_b")

for (const [name, skip] of [["embedded", false], ["postgresql", !hasPostgres]] as const) {
  describe.skipIf(skip)(`job_events on an existing ${name} store`, () => {
    it.scopedLive(
      "the agent runs' events move to job_events as they were, under row-level security, and still go with their run",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* migrateWith(BEFORE_JOB_EVENTS)
          for (const org of [A, B]) {
            const run = `run_${org}`
            yield* sql`insert into agent_runs (id, org_id, user_id, principal_kind, prompt, status, max_turns)
              values (${run}, ${org}, ${`user_${org}`}, 'local', 'how many?', 'completed', 5)`
            for (const [seq, step, type] of [[1, "model/0", "model_call"], [2, "tool/0/0", "tool_call"], [3, "end", "completed"]] as const) {
              yield* sql`insert into agent_run_events (run_id, org_id, seq, step, type, data, created_at)
                values (${run}, ${org}, ${seq}, ${step}, ${type}, ${JSON.stringify({ seq, org })}::jsonb, ${new Date(Date.UTC(2026, 10, 1, 0, 0, seq))})`
            }
          }
          const before = yield* sql<{ run_id: string; seq: number; step: string; type: string; data: unknown; created_at: Date }>`
            select run_id, org_id, seq, step, type, data, created_at from agent_run_events order by run_id, seq`

          const applied = yield* migrateWith(migrations)
          // The migrations after it (later issues) apply too.
          expect(applied.map(([, name]) => name)[0]).toBe("job_events")

          const after = yield* sql<{ run_id: string; seq: number; step: string; type: string; data: unknown; created_at: Date }>`
            select job_id as run_id, org_id, seq, step, type, data, created_at from job_events where kind = 'agent_run' order by job_id, seq`
          expect(before).toHaveLength(6)
          expect(after).toEqual(before)
          expect((yield* sql<{ gone: string | null }>`select to_regclass('agent_run_events')::text as gone`)[0]!.gone).toBeNull()

          const seenByA = yield* tenantScope(sql)(A)(sql<{ org_id: string }>`select org_id from job_events`)
          expect(new Set(seenByA.map((row) => row.org_id))).toEqual(new Set([A]))
          const foreign = yield* tenantScope(sql)(A)(
            sql`insert into job_events (kind, job_id, org_id, seq, step, type, data) values ('agent_run', ${`run_${B}`}, ${B}, 4, 'x', 'x', '{}')`
          ).pipe(Effect.flip)
          expect(foreign._tag).toBe("SqlError")

          yield* sql`delete from agent_runs where id = ${`run_${A}`}`
          const left = yield* sql<{ job_id: string }>`select distinct job_id from job_events`
          expect(left.map((row) => row.job_id)).toEqual([`run_${B}`])
        }).pipe(Effect.provide(unmigrated[name]())),
      60_000
    )
  })
}
