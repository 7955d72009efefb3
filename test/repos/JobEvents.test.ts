import { afterAll, describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { LOCAL_ORG, LOCAL_USER } from "../../src/domain/Ids"
import { AgentRunsRepo } from "../../src/repos/AgentRunsRepo"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const database = hasPostgres ? await createTestDatabase() : undefined
afterAll(() => database?.drop())

const store = AgentRunsRepo.Default.pipe(
  Layer.provideMerge(StoreLive),
  Layer.provide(AppConfig.Default),
  Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", database?.url ?? ""]]))))
)

describe.skipIf(!hasPostgres)("job events on PostgreSQL", () => {
  layer(store, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("steps of one job whose events are written at once each get their own seq: none is lost, none fails", () =>
      Effect.gen(function* () {
        const repo = yield* AgentRunsRepo
        const sql = yield* SqlClient.SqlClient
        const runId = "run_concurrent_events"
        yield* repo.insert({ id: runId, org_id: LOCAL_ORG, user_id: LOCAL_USER, principal_kind: "local", key_id: null, prompt: "p", connection_name: null, conversation_id: null, max_turns: 5, model: null, interactive: true, eval_run_id: null })
        const usage = { turns: 1, inputTokens: 10, outputTokens: 1, costUsd: 0.001 }
        // Each step twice, as a step done again after a crash writes its event again: it adds nothing the second time.
        const steps = Array.from({ length: 60 }, (_, i) => `tool/${i}`)
        yield* Effect.forEach([...steps, ...steps], (step) => repo.appendEvent(LOCAL_ORG, runId, step, "tool_call", { step }, usage), { concurrency: 8, discard: true })
        const events = yield* sql<{ seq: number; step: string }>`select seq, step from job_events where kind = 'agent_run' and job_id = ${runId} order by seq`
        expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1))
        expect(new Set(events.map((e) => e.step))).toEqual(new Set(steps))
        const stored = yield* repo.find(LOCAL_ORG, runId)
        expect(stored?.run).toMatchObject({ turns: 60, input_tokens: 600 })
      })
    )
  })
})
