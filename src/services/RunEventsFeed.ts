import { randomUUID } from "node:crypto"
import { Chunk, Deferred, Duration, Effect, Option, Queue, Schedule, Stream } from "effect"
import { StoreNotifications } from "../../layers/StoreNotifications"
import type { OrgId } from "../domain/Ids"
import { END_EVENT_TYPES, type JobEvent, type TextDelta } from "../domain/JobEvent"
import { JobEventsRepo } from "../repos/JobEventsRepo"
import { storeErrors } from "../repos/StoreErrors"

const storeDown = storeErrors("job events")
const FOLLOW_BATCH = 200
const POLL = Duration.millis(250)
// A follower looks again at least this often, so a run that ended without a new event is noticed.
const MAX_WAIT = Duration.seconds(2)

const TEXT_CHANNEL = "sluice_job_text"
// Which process sent a notification: a process delivers its own text at once, not again when the store echoes it.
const ORIGIN = randomUUID()
// A notification carries at most 8000 bytes: 1000 UTF-16 units are at most 6000 as JSON.
const PIECE = 1000
// Text waiting to be sent to the other processes, and text waiting for a slow follower: past these, pieces are dropped (the turn's event has it all).
const OUTBOX = 4096
const FOLLOWER_BACKLOG = 256

/** A job as the feed keys it: its kind and id. */
const keyOf = (kind: string, jobId: string) => `${kind}\u0000${jobId}`

interface Waiter {
  readonly after: number
  readonly wake: Deferred.Deferred<void>
}

/** `text` cut into pieces of at most PIECE units, never inside a surrogate pair. */
const pieces = (text: string) => {
  const out: Array<{ readonly at: number; readonly text: string }> = []
  for (let at = 0; at < text.length; ) {
    let end = Math.min(at + PIECE, text.length)
    if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end -= 1
    out.push({ at, text: text.slice(at, end) })
    at = end
  }
  return out
}

/**
 * A durable job's events to its followers, for every kind of job (each job keyed by its kind and
 * id): read from the store, with news of new ones at once when this process wrote them, else
 * within one poll of the store shared by every follower in the process (one query for all the jobs
 * followed, not one per stream). Carries a job's text as it streams, not kept: to this process's
 * followers at once, to other processes' through the store's notifications.
 */
export class RunEventsFeed extends Effect.Service<RunEventsFeed>()("sluice/RunEventsFeed", {
  scoped: Effect.gen(function* () {
    const repo = yield* JobEventsRepo
    const notifications = yield* StoreNotifications
    const waiting = new Map<string, { readonly kind: string; readonly id: string; readonly waiters: Set<Waiter> }>()
    const readers = new Map<string, Set<Queue.Queue<TextDelta>>>()

    const wake = (key: string, latest: number) => {
      const waiters = waiting.get(key)?.waiters
      for (const waiter of waiters ?? []) {
        if (waiter.after < latest) Deferred.unsafeDone(waiter.wake, Effect.void)
      }
    }

    /** This process wrote an event of the job: its followers here look now. */
    const published = (kind: string, jobId: string) => Effect.sync(() => wake(keyOf(kind, jobId), Number.POSITIVE_INFINITY))

    const poll = Effect.suspend(() => {
      if (waiting.size === 0) return Effect.void
      return Effect.map(repo.latestSeqs([...waiting.values()]), (latest) => latest.forEach(({ kind, job_id, seq }) => wake(keyOf(kind, job_id), seq)))
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("job events poll failed", cause)))
    yield* Effect.forkScoped(Effect.repeat(poll, Schedule.spaced(POLL)))

    /** Waits until the job may have events after `afterSeq`, or a short while passes: the follower reads again either way. */
    const news = (kind: string, jobId: string, afterSeq: number) =>
      Effect.flatMap(Deferred.make<void>(), (wakeUp) => {
        const key = keyOf(kind, jobId)
        const waiter: Waiter = { after: afterSeq, wake: wakeUp }
        return Effect.sync(() => {
          const followed = waiting.get(key) ?? { kind, id: jobId, waiters: new Set() }
          waiting.set(key, followed)
          followed.waiters.add(waiter)
        }).pipe(
          Effect.zipRight(Deferred.await(wakeUp).pipe(Effect.timeout(MAX_WAIT), Effect.ignore)),
          Effect.ensuring(
            Effect.sync(() => {
              const waiters = waiting.get(key)?.waiters
              waiters?.delete(waiter)
              if (waiters?.size === 0) waiting.delete(key)
            })
          )
        )
      })

    const deliver = (key: string, delta: TextDelta) => {
      for (const reader of readers.get(key) ?? []) Queue.unsafeOffer(reader, delta)
    }

    const outbox = yield* Queue.dropping<string>(OUTBOX)
    if (notifications.shared) {
      // One sender keeps each job's pieces in order without holding up the model's stream on the store.
      const send = Effect.flatMap(Queue.takeBetween(outbox, 1, 64), (payloads) =>
        Effect.forEach(payloads, (payload) => notifications.notify(TEXT_CHANNEL, payload), { discard: true })
      ).pipe(Effect.catchAllCause((cause) => Effect.logDebug("job text notification failed", cause)))
      yield* Effect.forkScoped(Effect.forever(send))
      const received = (payload: string) =>
        Effect.try(() => {
          const { o, k, j, t, n, d } = JSON.parse(payload) as { o: string; k: string; j: string; t: number; n: number; d: string }
          const key = keyOf(k, j)
          if (o !== ORIGIN && readers.has(key)) deliver(key, { type: "text_delta", turn: t, offset: n, text: d })
        })
      yield* Effect.forkScoped(Stream.runForEach(notifications.listen(TEXT_CHANNEL), (payload) => Effect.ignore(received(payload))))
    }

    /** The job wrote `text` at `offset` of its part `turn`: to its followers, here and elsewhere. */
    const streamed = (kind: string, jobId: string, turn: number, offset: number, text: string) =>
      Effect.sync(() => {
        deliver(keyOf(kind, jobId), { type: "text_delta", turn, offset, text })
        if (!notifications.shared) return
        for (const piece of pieces(text)) Queue.unsafeOffer(outbox, JSON.stringify({ o: ORIGIN, k: kind, j: jobId, t: turn, n: offset + piece.at, d: piece.text }))
      })

    /** The job's text as it streams from now on, for as long as the stream is read. */
    const texts = (kind: string, jobId: string): Stream.Stream<TextDelta> =>
      Stream.unwrapScoped(
        Effect.map(
          Effect.acquireRelease(
            Effect.tap(Queue.sliding<TextDelta>(FOLLOWER_BACKLOG), (reader) =>
              Effect.sync(() => readers.set(keyOf(kind, jobId), (readers.get(keyOf(kind, jobId)) ?? new Set()).add(reader)))
            ),
            (reader) =>
              Effect.zipRight(
                Effect.sync(() => {
                  const set = readers.get(keyOf(kind, jobId))
                  set?.delete(reader)
                  if (set?.size === 0) readers.delete(keyOf(kind, jobId))
                }),
                Queue.shutdown(reader)
              )
          ),
          (reader) => Stream.fromQueue(reader)
        )
      )

    /**
     * A job's events after `afterSeq` as they are written, to its end (its last event), as this
     * follower may see them (`shown`), with its text as it streams in between when `withText`.
     * `ended` tells a job that ended without an end event to send.
     */
    const follow = <E, R>(
      kind: string,
      orgId: OrgId,
      jobId: string,
      afterSeq: number,
      options: { readonly ended: Effect.Effect<boolean, E, R>; readonly shown: (event: JobEvent) => JobEvent; readonly withText: boolean }
    ) => {
      const events = Stream.paginateChunkEffect(afterSeq, (after) =>
        repo.events(kind, orgId, jobId, after, FOLLOW_BATCH).pipe(
          storeDown,
          Effect.flatMap((batch) => {
            const last = batch.at(-1)
            if (last !== undefined) {
              const next = END_EVENT_TYPES.has(last.type) ? Option.none() : Option.some(last.seq)
              return Effect.succeed([Chunk.unsafeFromArray(batch.map(options.shown)), next] as const)
            }
            // Nothing new: wait, unless the job ended. Its last events may have been written with its end, after the read above: read once more.
            return Effect.flatMap(options.ended, (ended) =>
              ended
                ? repo.events(kind, orgId, jobId, after, FOLLOW_BATCH).pipe(
                    storeDown,
                    Effect.map((rest) => [Chunk.unsafeFromArray(rest.map(options.shown)), rest.length === FOLLOW_BATCH ? Option.some(rest.at(-1)!.seq) : Option.none()] as const)
                  )
                : Effect.as(news(kind, jobId, after), [Chunk.empty<JobEvent>(), Option.some(after)] as const)
            )
          })
        )
      )
      return options.withText ? Stream.merge(events, texts(kind, jobId), { haltStrategy: "left" }) : events
    }

    return { published, streamed, follow } as const
  }),
  dependencies: [JobEventsRepo.Default, StoreNotifications.Default]
}) {}
