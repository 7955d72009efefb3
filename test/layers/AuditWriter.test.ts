import { afterAll, describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Cause, ConfigProvider, Context, Effect, Exit, Layer, Scope } from "effect"
import { AuditWriter } from "../../layers/AuditWriter"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import type { AuditInsert } from "../../src/repos/AuditInsert"
import { AuditRepo } from "../../src/repos/AuditRepo"
import { storable } from "../../src/repos/Storable"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const database = hasPostgres ? await createTestDatabase() : undefined
afterAll(() => database?.drop())

const row = (requestId: string, fields: Partial<AuditInsert> = {}): AuditInsert => ({
  timestamp: 1,
  org_id: null,
  principal: null,
  key_id: null,
  user_id: null,
  event_type: "api",
  method: "GET",
  route: "/api/plan",
  status: 200,
  connection: null,
  sql: null,
  outcome: "success",
  block_reason: null,
  rows: null,
  duration_ms: 1,
  client_ip: null,
  user_agent: null,
  request_id: requestId,
  details: null,
  ...fields
})

describe("storable: any value a caller sent, as the store takes it", () => {
  it("replaces NUL and lone surrogates, keeps pairs, cuts long text, walks JSON", () => {
    expect(storable("a\u0000b", 100)).toBe("a\uFFFDb")
    expect(storable("x\ud800y\udfffz", 100)).toBe("x\uFFFDy\uFFFDz")
    expect(storable("pair \ud83d\ude00 ok", 100)).toBe("pair \ud83d\ude00 ok")
    const long = storable("y".repeat(100_000), 512) as string
    expect(long).toHaveLength(512)
    expect(long.endsWith("…[truncated]")).toBe(true)
    // A cut through a surrogate pair leaves no half behind.
    expect(storable(`${"a".repeat(499)}\ud83d\ude00${"b".repeat(20)}`, 512)).toBe(`${"a".repeat(499)}\uFFFD…[truncated]`)
    expect(storable({ "k\u0000": ["v\ud800", 1, Number.NaN, null, true], when: new Date(0), n: 10n }, 100)).toEqual({
      "k\uFFFD": ["v\uFFFD", 1, null, null, true],
      when: "1970-01-01T00:00:00.000Z",
      n: "10"
    })
  })
})

describe.skipIf(!hasPostgres)("AuditWriter on PostgreSQL", () => {
  const live = AuditWriter.Default.pipe(
    Layer.provideMerge(StoreLive),
    Layer.provide(AppConfig.Default),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", database?.url ?? ""]]))))
  )
  layer(live, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("poison in every field is stored, not refused: the whole batch commits", () =>
      Effect.gen(function* () {
        const writer = yield* AuditWriter
        const sql = yield* SqlClient.SqlClient
        const poison = "\u0000\ud800".concat("z".repeat(200_000))
        yield* writer.write([
          row("poison-1", { connection: poison, sql: poison, user_agent: poison, route: poison, details: { arguments: poison, [poison]: [poison] } }),
          row("poison-2", { principal: poison, client_ip: poison, block_reason: poison, event_type: poison })
        ])
        const stored = yield* sql<{ request_id: string; connection: string | null; sql_length: number }>`
          select request_id, connection, length(sql) as sql_length from gateway_audit_logs where request_id like 'poison-%' order by request_id`
        expect(stored.map((r) => r.request_id)).toEqual(["poison-1", "poison-2"])
        expect(stored[0]!.connection!.startsWith("\uFFFD\uFFFDzzz")).toBe(true)
        expect(stored[0]!.sql_length).toBe(100_000)
      })
    )

    it.effect("a row the store refuses fails alone; the rows batched with it commit", () =>
      Effect.gen(function* () {
        const writer = yield* AuditWriter
        const sql = yield* SqlClient.SqlClient
        // The outcome check constraint refuses this row whatever its text holds.
        const refused = row("batch-bad", { outcome: "bogus" as AuditInsert["outcome"] })
        const [good, bad, alsoGood] = yield* Effect.all(
          [writer.write([row("batch-good-1"), row("batch-good-2")]), writer.write([refused]), writer.write([row("batch-good-3")])],
          { concurrency: "unbounded", mode: "either" }
        ).pipe(Effect.map((results) => results.map((r) => r._tag)))
        expect([good, bad, alsoGood]).toEqual(["Right", "Left", "Right"])
        // Queued together in one write: one INSERT, which fails, then each row alone.
        const mixed = yield* Effect.exit(writer.write([row("mixed-good-1"), row("mixed-bad", { outcome: "bogus" as AuditInsert["outcome"] }), row("mixed-good-2")]))
        expect(Exit.isFailure(mixed)).toBe(true)
        const stored = yield* sql<{ request_id: string }>`
          select request_id from gateway_audit_logs where request_id like 'batch-%' or request_id like 'mixed-%' order by request_id`
        expect(stored.map((r) => r.request_id)).toEqual(["batch-good-1", "batch-good-2", "batch-good-3", "mixed-good-1", "mixed-good-2"])
      })
    )

    it.effect("append, the plain form a request path without a fiber calls, tells each caller once how its rows' commit ended", () =>
      Effect.gen(function* () {
        const writer = yield* AuditWriter
        const sql = yield* SqlClient.SqlClient
        const told: Record<string, Array<string>> = { good: [], mixed: [], none: [] }
        const appended = (name: string, rows: ReadonlyArray<AuditInsert>) =>
          Effect.async<void>((resume) =>
            writer.append(rows, (exit) => {
              told[name]!.push(Exit.isSuccess(exit) ? "committed" : `failed: ${exit.cause._tag}`)
              resume(Effect.void)
            })
          )
        yield* Effect.all(
          [
            appended("good", [row("append-good-1"), row("append-good-2")]),
            appended("mixed", [row("append-mixed-1"), row("append-mixed-bad", { outcome: "bogus" as AuditInsert["outcome"] })]),
            appended("none", [])
          ],
          { concurrency: "unbounded" }
        )
        expect(told).toEqual({ good: ["committed"], mixed: ["failed: Fail"], none: ["committed"] })
        const stored = yield* sql<{ request_id: string }>`select request_id from gateway_audit_logs where request_id like 'append-%' order by request_id`
        expect(stored.map((r) => r.request_id)).toEqual(["append-good-1", "append-good-2", "append-mixed-1"])
      })
    )

    it.effect("a caller that throws as it is told costs only its own answer: the writer goes on", () =>
      Effect.gen(function* () {
        const writer = yield* AuditWriter
        writer.append([row("thrower-1")], () => {
          throw new Error("a handler writing to a closed socket")
        })
        yield* writer.write([row("after-thrower")]).pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "the writer stopped" }))
      })
    )
  })

  it.effect("a writer whose scope has closed refuses rows at once instead of leaving its callers waiting", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const writer = Context.get(yield* Layer.buildWithScope(live, scope), AuditWriter)
      yield* writer.write([row("before-close")])
      yield* Scope.close(scope, Exit.void)
      let told: Exit.Exit<void, unknown> | undefined
      writer.append([row("after-close")], (exit) => (told = exit))
      expect(told !== undefined && Exit.isInterrupted(told)).toBe(true)
    })
  )
})

describe.skipIf(!hasPostgres)("AuditWriter when building a batch's statement throws", () => {
  // The repository as the store gives it, except that its first batch throws while its statement is being made.
  let throwNext = true
  const throwingOnce = Layer.effect(
    AuditRepo,
    Effect.map(AuditRepo, (repo) =>
      AuditRepo.make({
        ...repo,
        insertStatement: (rows) => {
          if (throwNext) {
            throwNext = false
            throw new Error("a row the statement could not be made from")
          }
          return repo.insertStatement(rows)
        }
      })
    )
  ).pipe(Layer.provide(AuditRepo.Default))
  const live = AuditWriter.DefaultWithoutDependencies.pipe(
    Layer.provide(throwingOnce),
    Layer.provideMerge(StoreLive),
    Layer.provide(AppConfig.Default),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", database?.url ?? ""]]))))
  )
  layer(live, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("its callers are told it failed, and the writer goes on with the next batch", () =>
      Effect.gen(function* () {
        const writer = yield* AuditWriter
        const first = yield* Effect.exit(writer.write([row("throwing-batch")])).pipe(Effect.timeout("5 seconds"))
        expect(Exit.isFailure(first) && Cause.isDie(first.cause)).toBe(true)
        yield* writer.write([row("after-throwing-batch")]).pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "the writer stopped" }))
      })
    )
  })
})
