import { randomUUID } from "node:crypto"
import { Deferred, Duration, Effect, Queue, Schedule, Stream } from "effect"
import { StoreNotifications } from "../../layers/StoreNotifications"
import type { RunTextDelta } from "../domain/AgentRun"
import { AgentRunsRepo } from "../repos/AgentRunsRepo"

const POLL = Duration.millis(250)
// A follower looks again at least this often, so a run that ended without a new event is noticed.
const MAX_WAIT = Duration.seconds(2)

const TEXT_CHANNEL = "sluice_run_text"
// Which process sent a notification: a process delivers its own text at once, not again when the store echoes it.
const ORIGIN = randomUUID()
// A notification carries at most 8000 bytes: 1000 UTF-16 units are at most 6000 as JSON.
const PIECE = 1000
// Text waiting to be sent to the other processes, and text waiting for a slow follower: past these, pieces are dropped (the turn's event has it all).
const OUTBOX = 4096
const FOLLOWER_BACKLOG = 256

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
 * Tells a run's followers when it may have new events: at once when this process wrote them,
 * else within one poll of the store shared by every follower in the process (one query for all
 * the runs followed, not one per stream). Carries the model's text as it streams, not kept: to
 * this process's followers at once, to other processes' through the store's notifications.
 */
export class RunEventsFeed extends Effect.Service<RunEventsFeed>()("sluice/RunEventsFeed", {
  scoped: Effect.gen(function* () {
    const repo = yield* AgentRunsRepo
    const notifications = yield* StoreNotifications
    const waiting = new Map<string, Set<Waiter>>()
    const readers = new Map<string, Set<Queue.Queue<RunTextDelta>>>()

    const wake = (runId: string, latest: number) => {
      const waiters = waiting.get(runId)
      for (const waiter of waiters ?? []) {
        if (waiter.after < latest) Deferred.unsafeDone(waiter.wake, Effect.void)
      }
    }

    /** This process wrote an event of the run: its followers here look now. */
    const published = (runId: string) => Effect.sync(() => wake(runId, Number.POSITIVE_INFINITY))

    const poll = Effect.suspend(() => {
      if (waiting.size === 0) return Effect.void
      return Effect.map(repo.latestSeqs([...waiting.keys()]), (latest) => latest.forEach(({ run_id, seq }) => wake(run_id, seq)))
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("run events poll failed", cause)))
    yield* Effect.forkScoped(Effect.repeat(poll, Schedule.spaced(POLL)))

    /** Waits until run `runId` may have events after `afterSeq`, or a short while passes: the follower reads again either way. */
    const news = (runId: string, afterSeq: number) =>
      Effect.flatMap(Deferred.make<void>(), (wakeUp) => {
        const waiter: Waiter = { after: afterSeq, wake: wakeUp }
        return Effect.sync(() => waiting.set(runId, (waiting.get(runId) ?? new Set()).add(waiter))).pipe(
          Effect.zipRight(Deferred.await(wakeUp).pipe(Effect.timeout(MAX_WAIT), Effect.ignore)),
          Effect.ensuring(
            Effect.sync(() => {
              const waiters = waiting.get(runId)
              waiters?.delete(waiter)
              if (waiters?.size === 0) waiting.delete(runId)
            })
          )
        )
      })

    const deliver = (runId: string, delta: RunTextDelta) => {
      for (const reader of readers.get(runId) ?? []) Queue.unsafeOffer(reader, delta)
    }

    const outbox = yield* Queue.dropping<string>(OUTBOX)
    if (notifications.shared) {
      // One sender keeps each run's pieces in order without holding up the model's stream on the store.
      const send = Effect.flatMap(Queue.takeBetween(outbox, 1, 64), (payloads) =>
        Effect.forEach(payloads, (payload) => notifications.notify(TEXT_CHANNEL, payload), { discard: true })
      ).pipe(Effect.catchAllCause((cause) => Effect.logDebug("run text notification failed", cause)))
      yield* Effect.forkScoped(Effect.forever(send))
      const received = (payload: string) =>
        Effect.try(() => {
          const { o, r, t, n, d } = JSON.parse(payload) as { o: string; r: string; t: number; n: number; d: string }
          if (o !== ORIGIN && readers.has(r)) deliver(r, { type: "text_delta", turn: t, offset: n, text: d })
        })
      yield* Effect.forkScoped(Stream.runForEach(notifications.listen(TEXT_CHANNEL), (payload) => Effect.ignore(received(payload))))
    }

    /** The model wrote `text` at `offset` of turn `turn` of run `runId`: to its followers, here and elsewhere. */
    const streamed = (runId: string, turn: number, offset: number, text: string) =>
      Effect.sync(() => {
        deliver(runId, { type: "text_delta", turn, offset, text })
        if (!notifications.shared) return
        for (const piece of pieces(text)) Queue.unsafeOffer(outbox, JSON.stringify({ o: ORIGIN, r: runId, t: turn, n: offset + piece.at, d: piece.text }))
      })

    /** The model's text of run `runId` as it streams from now on, for as long as the stream is read. */
    const texts = (runId: string): Stream.Stream<RunTextDelta> =>
      Stream.unwrapScoped(
        Effect.map(
          Effect.acquireRelease(
            Effect.tap(Queue.sliding<RunTextDelta>(FOLLOWER_BACKLOG), (reader) => Effect.sync(() => readers.set(runId, (readers.get(runId) ?? new Set()).add(reader)))),
            (reader) =>
              Effect.zipRight(
                Effect.sync(() => {
                  const set = readers.get(runId)
                  set?.delete(reader)
                  if (set?.size === 0) readers.delete(runId)
                }),
                Queue.shutdown(reader)
              )
          ),
          (reader) => Stream.fromQueue(reader)
        )
      )

    return { news, published, streamed, texts } as const
  }),
  dependencies: [AgentRunsRepo.Default, StoreNotifications.Default]
}) {}
