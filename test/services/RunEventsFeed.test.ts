import { afterAll, describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Chunk, ConfigProvider, Effect, Layer, Stream } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { LOCAL_ORG } from "../../src/domain/Ids"
import type { JobEvent } from "../../src/domain/JobEvent"
import { appendJobEvent } from "../../src/repos/JobEventsRepo"
import { RunEventsFeed } from "../../src/services/RunEventsFeed"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const database = hasPostgres ? await createTestDatabase() : undefined
afterAll(() => database?.drop())

const feed = RunEventsFeed.Default.pipe(
  Layer.provideMerge(StoreLive),
  Layer.provideMerge(AppConfig.Default),
  Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", database?.url ?? ""]]))))
)

const KIND = "feed_test"

describe.skipIf(!hasPostgres)("a job's events to a follower", () => {
  layer(feed, { timeout: 60_000, excludeTestServices: true })((it) => {
    const append = (jobId: string, step: string, type: string) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) => appendJobEvent(sql, { kind: KIND, orgId: LOCAL_ORG, jobId, step, type, data: { step } }))

    const followed = <R>(jobId: string, ended: Effect.Effect<boolean, never, R>) =>
      Effect.flatMap(RunEventsFeed, (events) =>
        events.follow(KIND, LOCAL_ORG, jobId, 0, { ended, shown: (event) => event, withText: false }).pipe(Stream.runCollect, Effect.map((chunk) => Chunk.toArray(chunk).filter((item): item is JobEvent => "seq" in item)))
      )

    it.effect("a job that ends between the follower's empty read and its look at whether the job ended still gives the follower its last event", () =>
      Effect.gen(function* () {
        const jobId = "ends_between_reads"
        for (const step of ["1", "2", "3", "4", "5"]) yield* append(jobId, step, "tool_call")
        // The job's last event and its end are written together, just after the follower found nothing new.
        const endsNow = Effect.as(append(jobId, "6", "completed"), true).pipe(Effect.orDie)
        const seen = yield* followed(jobId, endsNow)
        expect(seen.map((event) => [event.seq, event.type])).toEqual([
          [1, "tool_call"],
          [2, "tool_call"],
          [3, "tool_call"],
          [4, "tool_call"],
          [5, "tool_call"],
          [6, "completed"]
        ])
      })
    )

    it.effect("a job that ended without an end event ends its follower's stream after its last event", () =>
      Effect.gen(function* () {
        const jobId = "ended_silently"
        for (const step of ["1", "2"]) yield* append(jobId, step, "tool_call")
        const seen = yield* followed(jobId, Effect.succeed(true))
        expect(seen.map((event) => event.seq)).toEqual([1, 2])
      })
    )

    it.effect("a follower waits for the job's events until its end event, however many batches they take", () =>
      Effect.gen(function* () {
        const jobId = "many_events"
        for (let step = 1; step <= 450; step += 1) yield* append(jobId, String(step), "tool_call")
        const done = append(jobId, "end", "completed").pipe(Effect.delay("300 millis"), Effect.orDie, Effect.fork)
        yield* done
        const seen = yield* followed(jobId, Effect.succeed(false))
        expect(seen.map((event) => event.seq)).toEqual(Array.from({ length: 451 }, (_, i) => i + 1))
        expect(seen.at(-1)?.type).toBe("completed")
      })
    )
  })
})
