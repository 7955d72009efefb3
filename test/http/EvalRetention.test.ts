import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ObjectStore } from "../../layers/ObjectStore"
import { runPrefix, taskEvidenceKey } from "../../src/domain/EvalRun"
import { LOCAL_ORG } from "../../src/domain/Ids"
import { EvalEvidence } from "../../src/services/EvalEvidence"
import { endedEvalRun, numberedRunId } from "../support/EvalRunRows"
import { request } from "../support/Http"
import { startInProcess } from "../support/InProcess"

const RUNS = 102
const runId = numberedRunId

describe("evaluation evidence retention (issue 31): the newest 10 ended runs keep their tasks' files, the newest 100 their transcripts", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let admin: string
  const exists = (key: string) => gateway.runtime.runPromise(Effect.flatMap(ObjectStore, (objects) => Effect.flatMap(objects.backend, (backend) => backend.head(key))).pipe(Effect.map((found) => found._tag === "Some")))

  beforeAll(async () => {
    gateway = await startInProcess()
    admin = await gateway.keyWith(["read", "query", "write", "admin"])
    // Ended runs, run 1 the newest, each with a task's evidence, its transcript and run.json.
    await gateway.runtime.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const backend = yield* (yield* ObjectStore).backend
        for (let n = 1; n <= RUNS; n++) {
          const id = runId(n)
          yield* endedEvalRun(id)
          yield* sql`update eval_runs set created_at = now() - make_interval(mins => ${n}) where id = ${id}`
          for (const file of ["evidence.json", "transcript.json"] as const) yield* backend.put(taskEvidenceKey(LOCAL_ORG, id, "t", file), Buffer.from("{}"), "application/json")
          yield* backend.put(`${runPrefix(LOCAL_ORG, id)}/run.json`, Buffer.from("{}"), "application/json")
        }
      })
    )
  }, 120_000)
  afterAll(async () => {
    await gateway?.stop()
  })

  it("prunes what is past each limit once, keeps run.json and verdicts, and says so where the files are asked for", async () => {
    const prune = () => gateway.runtime.runPromise(Effect.flatMap(EvalEvidence, (evidence) => evidence.pruneDue))
    expect(await prune()).toBe(RUNS - 10)
    const kept = async (n: number) => [await exists(taskEvidenceKey(LOCAL_ORG, runId(n), "t", "evidence.json")), await exists(taskEvidenceKey(LOCAL_ORG, runId(n), "t", "transcript.json")), await exists(`${runPrefix(LOCAL_ORG, runId(n))}/run.json`)]
    expect(await kept(1)).toEqual([true, true, true])
    expect(await kept(10)).toEqual([true, true, true])
    expect(await kept(11)).toEqual([false, true, true])
    expect(await kept(100)).toEqual([false, true, true])
    expect(await kept(101)).toEqual([false, false, true])
    expect(await kept(102)).toEqual([false, false, true])
    // Done once: the next pass finds nothing to prune.
    expect(await prune()).toBe(0)

    const run = (await request(gateway.url, `/api/evals/runs/${runId(11)}`, { key: admin })).json
    expect(run).toMatchObject({ status: "completed", evidence_pruned: "artifacts" })
    expect((await request(gateway.url, `/api/evals/runs/${runId(101)}`, { key: admin })).json.evidence_pruned).toBe("transcripts")
    expect((await request(gateway.url, `/api/evals/runs/${runId(1)}`, { key: admin })).json.evidence_pruned).toBeNull()
    const gone = await request(gateway.url, `/api/evals/runs/${runId(11)}/artifacts/t/evidence.json`, { key: admin })
    expect([gone.status, gone.json.message]).toEqual([404, expect.stringMatching(/deleted by retention: only an organization's newest 10 ended runs/)])
    expect((await request(gateway.url, `/api/evals/runs/${runId(11)}/tasks/t/transcript`, { key: admin })).status).toBe(200)
    const regrade = await request(gateway.url, `/api/evals/runs/${runId(11)}/regrade`, { key: admin, method: "POST" })
    expect([regrade.status, regrade.json.message]).toEqual([409, expect.stringMatching(/deleted by retention/)])
  }, 60_000)
})
