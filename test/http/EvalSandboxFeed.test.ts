import { Chunk, Deferred, Effect, Fiber, FiberId, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { OrgId } from "../../src/domain/Ids"
import { type EvalSandboxFeed, EvalSandboxes, LOG_CHARS, LOG_STREAM_LIMITS, MAX_LOG_STREAMS } from "../../src/services/EvalSandboxes"
import { eventually } from "../support/Eventually"
import { request } from "../support/Http"
import { localOperator, startInProcess } from "../support/InProcess"
import { followSse } from "../support/Sse"

const RUN = `evr_${"ab".repeat(16)}`

/** The live feed of evaluation sandboxes (issue 31): listed, their events, their logs followed live, within the stream caps. */
describe("evaluation sandboxes: the live feed", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let key: string

  beforeAll(async () => {
    gateway = await startInProcess()
    key = await gateway.keyWith(["read"])
  }, 60_000)
  afterAll(() => gateway?.stop())

  /** A script's sandbox as a task's step tracks it, held until `end` is called; `feed` is what the step tells it. */
  const tracked = async (taskId: string, orgId = localOperator.orgId) => {
    const done = Deferred.unsafeMake<void>(FiberId.none)
    let feed: EvalSandboxFeed | undefined
    const fiber = gateway.runtime.runFork(
      Effect.flatMap(EvalSandboxes, (sandboxes) =>
        sandboxes.track({ orgId, runId: RUN, taskId, phase: "setup", script: "setup/prepare.py", memoryMb: 256 }, (live) =>
          Effect.zipRight(Effect.sync(() => (feed = live)), Deferred.await(done))
        )
      )
    )
    await eventually(async () => feed, (f) => f !== undefined, "the sandbox is tracked")
    return { feed: feed!, name: `eval-${"ab".repeat(16)}-${taskId}-setup`, end: () => gateway.runtime.runPromise(Deferred.succeed(done, undefined)).then(() => gateway.runtime.runPromise(Fiber.join(fiber))) }
  }

  it("lists the organization's script sandboxes, says what happened to each, and streams its log as it is printed", async () => {
    const sandbox = await tracked("live")
    sandbox.feed.started("sbx_0123")
    sandbox.feed.output("stdout", "step 1\n")
    const listed = await request(gateway.url, "/api/evals/sandboxes", { key })
    expect(listed.status, listed.text).toBe(200)
    expect(listed.json.items).toEqual([
      expect.objectContaining({ name: sandbox.name, run_id: RUN, task_id: "live", phase: "setup", script: "setup/prepare.py", status: "running", sandbox_id: "sbx_0123", memory_limit_mb: 256, log_chars: 7, ended_at: null, last_event: "started" })
    ])
    expect((await request(gateway.url, `/api/evals/sandboxes?run_id=evr_other`, { key })).json.items).toEqual([])

    const followed = followSse(gateway.url, `/api/evals/sandboxes/${sandbox.name}/logs/stream`, key)
    expect((await followed.answered).headers["content-type"]).toMatch(/text\/event-stream/)
    await eventually(async () => followed.events.length, (n) => n >= 2, "the log so far")
    expect(followed.events[0]).toEqual({ id: null, event: "open", data: { name: sandbox.name, status: "running", offset: 0, log_chars: 7 } })
    expect(followed.events[1]).toEqual({ id: "7", event: "log", data: { stream: "stdout", text: "step 1\n", offset: 0 } })
    // Printed while it is followed: sent as it comes, not when the script ends.
    sandbox.feed.output("stderr", "warning\n")
    await eventually(async () => followed.events.length, (n) => n >= 3, "what was printed next")
    expect(followed.events[2]).toEqual({ id: "15", event: "log", data: { stream: "stderr", text: "warning\n", offset: 7 } })
    sandbox.feed.event("exited", "the script ended")
    await sandbox.end()
    expect((await followed.ended).broken).toBe(false)
    expect(followed.events.at(-1)).toEqual({
      id: null,
      event: "end",
      data: { status: "ended", last_event: "removed", log_chars: 15, log: `/api/evals/runs/${RUN}/tasks/live/setup/setup/log` }
    })

    const events = await request(gateway.url, `/api/evals/sandboxes/${sandbox.name}/events`, { key })
    expect(events.json.items.map((e: any) => e.type)).toEqual(["scheduled", "started", "exited", "removed"])
    expect(events.json.items[0].message).toBe("setup script setup/prepare.py, memory limit 256 MiB")
    // Ended, it is still listed a while, its log still readable from where a client left off.
    expect((await request(gateway.url, "/api/evals/sandboxes", { key })).json.items).toEqual([expect.objectContaining({ name: sandbox.name, status: "ended", last_event: "removed" })])
    const resumed = followSse(gateway.url, `/api/evals/sandboxes/${sandbox.name}/logs/stream`, key, "7")
    await resumed.ended
    expect(resumed.events.map((e) => [e.event, e.data.text ?? null])).toEqual([["open", null], ["log", "warning\n"], ["end", null]])
    const fromOffset = followSse(gateway.url, `/api/evals/sandboxes/${sandbox.name}/logs/stream?offset=15`, key)
    await fromOffset.ended
    expect(fromOffset.events.map((e) => e.event)).toEqual(["open", "end"])
  })

  it("refuses what is not an evaluation sandbox of the organization's, each with its own answer", async () => {
    const other = await tracked("theirs", OrgId.make("org_other"))
    other.feed.output("stdout", "their secret\n")
    try {
      expect((await request(gateway.url, "/api/evals/sandboxes", { key })).json.items.map((s: any) => s.name)).not.toContain(other.name)
      for (const path of [`/api/evals/sandboxes/${other.name}/events`, `/api/evals/sandboxes/${other.name}/logs/stream`]) {
        const refused = await request(gateway.url, path, { key })
        expect(refused.status, path).toBe(404)
        expect(refused.text).not.toContain("secret")
      }
      expect((await request(gateway.url, `/api/evals/sandboxes/eval-${"cd".repeat(16)}-x-setup/events`, { key })).status).toBe(404)
      for (const name of ["sbx_0123", `eval-${"ab".repeat(16)}-x-build`, `eval-${"ab".repeat(16)}-a b-setup`]) {
        const bad = await request(gateway.url, `/api/evals/sandboxes/${encodeURIComponent(name)}/events`, { key })
        expect(bad.status, name).toBe(400)
      }
      const badOffset = await request(gateway.url, `/api/evals/sandboxes/${other.name}/logs/stream?offset=-1`, { key })
      expect(badOffset.status).toBe(400)
      expect(badOffset.json.code).toBe("invalid_request")
      expect((await request(gateway.url, "/api/evals/sandboxes")).status).toBe(401)
    } finally {
      await other.end()
    }
  })

  it(`serves ${MAX_LOG_STREAMS} log streams at once: the next is told to come back in 15 s, and a closed one gives its place back`, async () => {
    const sandbox = await tracked("busy")
    const path = `/api/evals/sandboxes/${sandbox.name}/logs/stream`
    const open = Array.from({ length: MAX_LOG_STREAMS }, () => followSse(gateway.url, path, key))
    try {
      for (const stream of open) expect((await stream.answered).statusCode).toBe(200)
      const ninth = await request(gateway.url, path, { key })
      expect(ninth.status).toBe(429)
      expect(ninth.headers["retry-after"]).toBe("15")
      expect(ninth.json.code).toBe("rate_limited")
      open[0]!.close()
      const again = async () => {
        const stream = followSse(gateway.url, path, key)
        const answered = await stream.answered
        stream.close()
        return answered.statusCode
      }
      await eventually(again, (status) => status === 200, "a place given back")
    } finally {
      open.forEach((stream) => stream.close())
      await sandbox.end()
    }
  })

  it("ends a stream at its byte cap with where to resume, and a reconnection from there reads the rest; a log past its cap is cut and says so", async () => {
    const sandbox = await tracked("loud")
    // Three UTF-8 bytes a character: the whole log is more than a stream may send.
    for (let i = 0; i < 110; i++) sandbox.feed.output("stdout", "€".repeat(10_000))
    const events = await request(gateway.url, `/api/evals/sandboxes/${sandbox.name}/events`, { key })
    expect(events.json.items.map((e: any) => e.type)).toEqual(["scheduled", "log_cut"])
    await sandbox.end()
    const first = followSse(gateway.url, `/api/evals/sandboxes/${sandbox.name}/logs/stream`, key)
    await first.ended
    expect(first.counted.bytes).toBeLessThanOrEqual(LOG_STREAM_LIMITS.bytes)
    const limit = first.events.at(-1)!
    expect(limit.event).toBe("limit")
    expect(limit.data.message).toMatch(/sent its 2097152 bytes; open it again with Last-Event-ID \d+ to go on/)
    const resumeAt = first.events.at(-2)!.id!
    expect(limit.data.offset).toBe(Number(resumeAt))
    const rest = followSse(gateway.url, `/api/evals/sandboxes/${sandbox.name}/logs/stream`, key, resumeAt)
    await rest.ended
    expect(rest.events.at(-1)!.event).toBe("end")
    const text = [...first.events, ...rest.events].filter((e) => e.event === "log").map((e) => e.data.text).join("")
    expect(text).toBe("€".repeat(LOG_CHARS))
  })

  it("keeps a log of a million tiny prints in a few pieces, and streams it without holding the gateway (attack 40 F1, F2)", async () => {
    const sandbox = await tracked("tiny")
    const fed = performance.now()
    for (let i = 0; i < 500_000; i++) sandbox.feed.output("stdout", "x")
    // Alternating streams: each change is a piece of its own, up to a cap past which the log is cut.
    for (let i = 0; i < 500_000; i++) sandbox.feed.output(i % 2 === 0 ? "stderr" : "stdout", "y")
    expect(performance.now() - fed).toBeLessThan(3000)
    await sandbox.end()
    const types = (await request(gateway.url, `/api/evals/sandboxes/${sandbox.name}/events`, { key })).json.items.map((e: any) => e.type)
    expect(types).toEqual(["scheduled", "log_cut", "removed"])
    let worstLagMs = 0
    let last = performance.now()
    const ticker = setInterval(() => {
      worstLagMs = Math.max(worstLagMs, performance.now() - last - 10)
      last = performance.now()
    }, 10)
    const started = performance.now()
    const followed = followSse(gateway.url, `/api/evals/sandboxes/${sandbox.name}/logs/stream`, key)
    await followed.ended
    clearInterval(ticker)
    expect(performance.now() - started).toBeLessThan(5000)
    expect(worstLagMs).toBeLessThan(500)
    const logs = followed.events.filter((e) => e.event === "log")
    // The half million one-character prints to stdout are 31 events of 16,384 characters at most, not 500,000.
    expect(logs.slice(0, 31).map((e) => e.data.text).join("")).toBe("x".repeat(500_000))
    expect(logs.slice(0, 31).every((e) => e.data.stream === "stdout")).toBe(true)
  })

  it("lists an organization's ended sandboxes for their 10 minutes whatever another organization ends meanwhile (attack 40 F4)", async () => {
    const ours = await tracked("ours")
    await ours.end()
    for (let i = 0; i < 10; i++) await (await tracked(`theirs${i}`, OrgId.make("org_busy"))).end()
    expect((await request(gateway.url, `/api/evals/sandboxes/${ours.name}/events`, { key })).status).toBe(200)
  })

  it("takes an offset of digits alone, as Last-Event-ID (attack 40 F5)", async () => {
    const sandbox = await tracked("digits")
    try {
      for (const offset of ["1e3", "0x10", "1.0", " 1"]) {
        const refused = await request(gateway.url, `/api/evals/sandboxes/${sandbox.name}/logs/stream?offset=${encodeURIComponent(offset)}`, { key })
        expect(refused.status, offset).toBe(400)
      }
    } finally {
      await sandbox.end()
    }
  })

  it("says it is alive while nothing is printed, and ends a stream open past its time with where to resume", async () => {
    const sandbox = await tracked("quiet")
    sandbox.feed.output("stdout", "hello\n")
    try {
      const started = performance.now()
      const sent = await gateway.runtime.runPromise(
        Effect.flatMap(EvalSandboxes, (sandboxes) => sandboxes.logStream(localOperator, sandbox.name, 0, { ...LOG_STREAM_LIMITS, ms: 1000, heartbeatMs: 250 })).pipe(
          Effect.flatMap((stream) => Stream.runCollect(Stream.decodeText(stream))),
          Effect.map((chunks) => Chunk.join(chunks, ""))
        )
      )
      expect(performance.now() - started).toBeGreaterThanOrEqual(950)
      const kinds = [...sent.matchAll(/^event: (\w+)$/gm)].map((m) => m[1])
      expect(kinds.slice(0, 2)).toEqual(["open", "log"])
      expect(kinds.filter((k) => k === "heartbeat").length).toBeGreaterThanOrEqual(2)
      expect(kinds.at(-1)).toBe("limit")
      expect(sent).toMatch(/This stream was open 1 s; open it again with Last-Event-ID 6 to go on/)
    } finally {
      await sandbox.end()
    }
  })

  it("gives back the place of a stream asked for whose client left before it began", async () => {
    const sandbox = await tracked("left")
    try {
      const reserve = (reservationMs: number) =>
        gateway.runtime.runPromise(Effect.flatMap(EvalSandboxes, (sandboxes) => Effect.either(sandboxes.logStream(localOperator, sandbox.name, 0, { ...LOG_STREAM_LIMITS, reservationMs }))))
      for (let i = 0; i < MAX_LOG_STREAMS; i++) expect((await reserve(200))._tag).toBe("Right")
      expect((await reserve(200))._tag).toBe("Left")
      await new Promise((r) => setTimeout(r, 300))
      expect((await reserve(200))._tag).toBe("Right")
      await new Promise((r) => setTimeout(r, 300))
    } finally {
      await sandbox.end()
    }
  })
})
