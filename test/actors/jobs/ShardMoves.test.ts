import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ModelRequest, startModelFake } from "../../fakes/ModelFake"
import { type GatewayProcess, localKey, startGateway, startWorker } from "../../support/Gateway"
import { request } from "../../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../support/Servers"

const skip = !(await postgresAvailable())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const RUNS = 12

/** Each runner is given its own base URL, so the fake model tells which runner made each call. */
const runnerOf = (request: ModelRequest) => request.path.split("/")[1]!
const promptOf = (request: ModelRequest) => String(request.body.messages.findLast((m: any) => m.role === "user")?.content)

describe("shard moves: runners that keep running never redo a step in flight", () => {
  let store: TestDatabase
  let fake: Awaited<ReturnType<typeof startModelFake>>
  const calls: Array<{ readonly runner: string; readonly prompt: string; readonly at: number }> = []
  let release: () => void = () => {}
  let held = Promise.resolve()
  const hold = () => (held = new Promise<void>((resolve) => (release = resolve)))
  let first: GatewayProcess
  let worker: Awaited<ReturnType<typeof startWorker>>
  const others: Array<GatewayProcess> = []
  let key: string
  const env = (runner: string) => ({
    SP_LLM_PROVIDER: "openai-compatible",
    SP_LLM_BASE_URL: `${fake.url}/${runner}/v1`,
    SP_LLM_MODEL: "local-model",
    SP_JOB_POLL_MS: "100",
    SP_PER_KEY_RPM: "100000",
    SP_RATE_LIMIT_EXPENSIVE_RPM: "100000",
    SP_ENCRYPTION_KEY: "shard-move-test-encryption-key-0123456789",
    SP_ENCRYPTION_SALT: "shard-move-test-salt"
  })

  beforeAll(async () => {
    if (skip) return
    store = await createTestDatabase()
    fake = await startModelFake(async (req) => {
      calls.push({ runner: runnerOf(req), prompt: promptOf(req), at: Date.now() })
      await held
      return { text: "done" }
    })
    first = await startGateway({ databaseUrl: store.url, env: env("g1") })
    worker = await startWorker({ ...env("w"), DATABASE_URL: store.url })
    const admin = await localKey(first)
    key = (await request(first.url, "/api/keys", { key: admin, body: { name: "runner", scopes: ["read", "query", "agent:run"] } })).json.key
  }, 90_000)
  afterAll(async () => {
    release()
    for (const gateway of [first, ...others]) await gateway?.kill()
    worker?.process.kill("SIGKILL")
    await fake?.close()
    await store?.drop()
  })

  /** Starts RUNS runs and waits until each one's first model call is in flight (held). */
  const startHeldRuns = async (tag: string) => {
    hold()
    const ids: Array<string> = []
    for (let i = 0; i < RUNS; i++) {
      const started = await request(first.url, "/api/agent-runs", { key, body: { prompt: `${tag}-${i}` } })
      expect(started.status, started.text).toBe(202)
      ids.push(started.json.id)
    }
    const deadline = Date.now() + 20_000
    while (new Set(calls.filter((c) => c.prompt.startsWith(`${tag}-`)).map((c) => c.prompt)).size < RUNS && Date.now() < deadline) await sleep(50)
    return ids
  }
  const allEnded = async (ids: ReadonlyArray<string>) => {
    const deadline = Date.now() + 60_000
    for (const id of ids) {
      while (Date.now() < deadline) {
        const run = (await request(first.url, `/api/agent-runs/${id}`, { key })).json
        if (["completed", "failed", "cancelled"].includes(run.status)) {
          expect(run.status, JSON.stringify(run.error)).toBe("completed")
          break
        }
        await sleep(100)
      }
    }
  }
  const callsOf = (tag: string) => {
    const byPrompt = new Map<string, Array<string>>()
    for (const call of calls.filter((c) => c.prompt.startsWith(`${tag}-`))) byPrompt.set(call.prompt, [...(byPrompt.get(call.prompt) ?? []), call.runner])
    return byPrompt
  }

  it.skipIf(skip)("a runner joining takes shards over, and the runners giving them up finish their steps in flight first: no model call is made twice", async () => {
    const ids = await startHeldRuns("join")
    others.push(await startGateway({ databaseUrl: store.url, env: env("g2") }))
    // Long enough for the shards to move and for a step stopped by the move to be started again elsewhere.
    await sleep(5_000)
    release()
    await allEnded(ids)
    const twice = [...callsOf("join")].filter(([, runners]) => runners.length > 1)
    expect(twice, "model calls made again after a shard moved").toEqual([])
  }, 120_000)

  it.skipIf(skip)("a runner leaving: its steps resume elsewhere, the survivors redo nothing, and the leaving runner starts no new step", async () => {
    const ids = await startHeldRuns("leave")
    const leaving = others[0]!
    const stoppedAt = Date.now()
    leaving.process.kill("SIGTERM")
    const exit = await new Promise<number | null>((resolve) => leaving.process.once("exit", (code) => resolve(code)))
    await sleep(3_000)
    release()
    await allEnded(ids)
    expect(exit).toBe(0)
    for (const [prompt, runners] of callsOf("leave")) {
      // A call is made again only when the runner that made it left.
      const survivors = runners.filter((runner) => runner !== "g2")
      expect({ prompt, survivors: survivors.length }).toEqual({ prompt, survivors: Math.min(1, survivors.length) })
      if (runners.length > 1) expect({ prompt, first: runners[0] }).toEqual({ prompt, first: "g2" })
    }
    const startedWhileLeaving = calls.filter((c) => c.runner === "g2" && c.at > stoppedAt)
    expect(startedWhileLeaving).toEqual([])
  }, 120_000)
})
