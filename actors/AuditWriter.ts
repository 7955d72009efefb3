import type { SqlError } from "@effect/sql/SqlError"
import { Chunk, Deferred, Effect, Exit, Queue } from "effect"
import { type AuditInsert, AuditRepo, storableAuditRow } from "../src/repos/AuditRepo"

const MAX_BATCH = 500
const RETRY_CONCURRENCY = 4

interface Pending {
  readonly row: AuditInsert
  readonly committed: Deferred.Deferred<void, SqlError>
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
    const settle = (batch: ReadonlyArray<Pending>, exit: Exit.Exit<void, SqlError>) =>
      Effect.zipRight(
        Exit.isFailure(exit) ? Effect.logError("audit row failed", exit.cause) : Effect.void,
        Effect.forEach(batch, (pending) => Deferred.done(pending.committed, exit), { discard: true })
      )

    // A failed batch is retried row by row: one row the store refuses fails only its own caller.
    const commit = (batch: ReadonlyArray<Pending>) =>
      insert(batch).pipe(
        Effect.flatMap((exit) =>
          Exit.isSuccess(exit) || batch.length === 1
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
    const write = (rows: ReadonlyArray<AuditInsert>) =>
      Effect.gen(function* () {
        const pending = yield* Effect.forEach(rows, (row) =>
          Effect.map(Deferred.make<void, SqlError>(), (committed) => ({ row: storableAuditRow(row), committed }))
        )
        yield* Queue.offerAll(queue, pending)
        // Settled row by row before failing, so a refused row never leaves its neighbours' commits in flight.
        const settled = yield* Effect.forEach(pending, (p) => Effect.exit(Deferred.await(p.committed)))
        yield* Effect.forEach(settled, (exit) => exit, { discard: true })
      })

    return { write } as const
  }),
  dependencies: [AuditRepo.Default]
}) {}
