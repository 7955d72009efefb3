import { Cause, Chunk, Deferred, Effect, Exit, FiberId, Option, Queue } from "effect"
import type { Unavailable } from "../src/domain/Errors"
import { type AuditInsert, storableAuditRow } from "../src/repos/AuditInsert"
import { AuditRepo } from "../src/repos/AuditRepo"
import type { StatementRefused } from "../src/repos/StoreErrors"

const MAX_BATCH = 500
const RETRY_CONCURRENCY = 4

type WriteFailure = Unavailable | StatementRefused

/** Whether the store answered and refused the rows themselves, rather than failing to answer. */
const refusedByStore = (exit: Exit.Exit<void, WriteFailure>) =>
  Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (error) => error._tag === "StatementRefused")

interface Pending {
  readonly row: AuditInsert
  readonly committed: Deferred.Deferred<void, WriteFailure>
}

/**
 * Group commit for the audit log: callers wait until their row is durably committed, and every row
 * queued while one INSERT is in flight goes out together in the next one.
 */
export class AuditWriter extends Effect.Service<AuditWriter>()("sluice/AuditWriter", {
  scoped: Effect.gen(function* () {
    const repo = yield* AuditRepo
    const queue = yield* Queue.unbounded<Pending>()

    const insert = (batch: ReadonlyArray<Pending>) => Effect.exit(repo.insertBatch(batch.map((pending) => pending.row)))
    const settle = (batch: ReadonlyArray<Pending>, exit: Exit.Exit<void, WriteFailure>) =>
      Effect.zipRight(
        Exit.isFailure(exit) ? Effect.logError("audit row failed", exit.cause) : Effect.void,
        Effect.forEach(batch, (pending) => Deferred.done(pending.committed, exit), { discard: true })
      )

    // A batch the store refused is retried row by row: one bad row fails only its own caller. A store that did not answer fails the whole batch at once.
    const commit = (batch: ReadonlyArray<Pending>) =>
      insert(batch).pipe(
        Effect.flatMap((exit) =>
          Exit.isSuccess(exit) || batch.length === 1 || !refusedByStore(exit)
            ? settle(batch, exit)
            : Effect.logWarning("audit batch failed; retrying its rows one by one", exit.cause).pipe(
                Effect.zipRight(
                  Effect.forEach(batch, (pending) => Effect.flatMap(insert([pending]), (alone) => settle([pending], alone)), {
                    concurrency: RETRY_CONCURRENCY,
                    discard: true
                  })
                )
              )
        ),
        Effect.uninterruptible
      )

    yield* Queue.takeBetween(queue, 1, MAX_BATCH).pipe(
      Effect.flatMap((batch) => commit(Chunk.toReadonlyArray(batch))),
      Effect.forever,
      Effect.forkScoped
    )
    // Runs before the flush fiber is interrupted: whatever is still queued gets written.
    yield* Effect.addFinalizer(() =>
      Queue.takeAll(queue).pipe(Effect.flatMap((rest) => (Chunk.isEmpty(rest) ? Effect.void : commit(Chunk.toReadonlyArray(rest)))))
    )

    /**
     * Resolves once every row is committed (queued together, so they share a commit); fails if the
     * store refused them. Each row is made storable before it is queued.
     */
    // A request writes one row, sometimes a few: built in place rather than through forEach, which costs a dozen steps per call.
    const write = (rows: ReadonlyArray<AuditInsert>) =>
      Effect.suspend(() => {
        const pending = rows.map((row) => ({ row: storableAuditRow(row), committed: Deferred.unsafeMake<void, WriteFailure>(FiberId.none) }))
        // Settled row by row before failing, so a refused row never leaves its neighbours' commits in flight.
        const committed =
          pending.length === 1
            ? Deferred.await(pending[0]!.committed)
            : Effect.flatMap(Effect.all(pending.map((p) => Effect.exit(Deferred.await(p.committed)))), (settled) => Effect.all(settled, { discard: true }))
        return Effect.zipRight(Queue.offerAll(queue, pending), committed)
      })

    return { write } as const
  }),
  dependencies: [AuditRepo.Default]
}) {}
