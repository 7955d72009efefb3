import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LOCAL_ORG } from "../../src/domain/Ids"
import { EvalAccuracy } from "../../src/services/EvalAccuracy"
import { endedEvalRun, numberedRunId } from "../support/EvalRunRows"
import { request } from "../support/Http"
import { startInProcess } from "../support/InProcess"

const runId = numberedRunId

describe("accuracy records: which runs are recorded, and once", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let admin: string

  const endedRun = (n: number, status: "completed" | "failed", fingerprint: string) =>
    gateway.runtime.runPromise(endedEvalRun(runId(n), { status, fingerprint, verdict: "CORRECT", notify: ["a@example.com"] }))
  const record = (id: string) => gateway.runtime.runPromise(Effect.flatMap(EvalAccuracy, (accuracy) => accuracy.record(LOCAL_ORG, id)))

  beforeAll(async () => {
    gateway = await startInProcess()
    admin = await gateway.keyWith(["read"])
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
  })

  it("records a completed run graded against a known warehouse, once; not a failed run, nor one without a fingerprint", async () => {
    const fingerprint = `sha256:${"0".repeat(64)}`
    expect(await record(await endedRun(1, "completed", ""))).toBeNull()
    expect(await record(await endedRun(2, "failed", fingerprint))).toBeNull()
    const recorded = await record(await endedRun(3, "completed", fingerprint))
    expect(recorded).toMatchObject({ run_id: runId(3), accuracy: 1, comparison: null, tasks: [{ task_id: "t", attempts: 1, correct: 1, verdict: "CORRECT" }] })
    expect(await record(runId(3))).toBeNull()
    const history = await request(gateway.url, "/api/evals/accuracy", { key: admin })
    expect(history.json.items.map((item: { run_id: string }) => item.run_id)).toEqual([runId(3)])
  })

  it("records a completed run whose job ended before it could record it (a crash, the store away), once (attack 42 F4)", async () => {
    const missed = await endedRun(4, "completed", `sha256:${"1".repeat(64)}`)
    const sweep = () => gateway.runtime.runPromise(Effect.flatMap(EvalAccuracy, (accuracy) => accuracy.recordMissed))
    expect(await sweep()).toBe(1)
    expect(await sweep()).toBe(0)
    const history = await request(gateway.url, "/api/evals/accuracy", { key: admin })
    expect(history.json.items.map((item: { run_id: string }) => item.run_id)).toEqual([missed, runId(3)])
  })

  it("compares a run recorded late with the runs that finished before it, never after", async () => {
    const fingerprint = `sha256:${"2".repeat(64)}`
    const late = await endedRun(5, "completed", fingerprint)
    const later = await endedRun(6, "completed", fingerprint)
    await gateway.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`update eval_runs set ended_at = ended_at - interval '1 hour' where id = ${late}`))
    expect(await record(later)).toMatchObject({ comparison: null })
    const sweep = () => gateway.runtime.runPromise(Effect.flatMap(EvalAccuracy, (accuracy) => accuracy.recordMissed))
    expect(await sweep()).toBe(1)
    const history = (await request(gateway.url, "/api/evals/accuracy", { key: admin })).json.items as Array<{ run_id: string; comparison: unknown }>
    expect(history.find((item) => item.run_id === late)?.comparison).toBeNull()
  })
})
