import type { SqlError } from "@effect/sql/SqlError"
import { Chunk, Deferred, Effect, Exit, Queue } from "effect"
import { type AuditInsert, AuditRepo } from "../src/repos/AuditRepo"

const MAX_BATCH = 500

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

    const commit = (batch: ReadonlyArray<Pending>) =>
      Effect.exit(repo.insertBatch(batch.map((pending) => pending.row))).pipe(
        Effect.tap((exit) => (Exit.isFailure(exit) ? Effect.logError("audit batch failed", exit.cause) : Effect.void)),
        Effect.flatMap((exit) => Effect.forEach(batch, (pending) => Deferred.done(pending.committed, exit), { discard: true })),
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

    /** Resolves once every row is committed (queued together, so they share a commit); fails if the store refused them. */
    const write = (rows: ReadonlyArray<AuditInsert>) =>
      Effect.gen(function* () {
        const pending = yield* Effect.forEach(rows, (row) => Effect.map(Deferred.make<void, SqlError>(), (committed) => ({ row, committed })))
        yield* Queue.offerAll(queue, pending)
        yield* Effect.forEach(pending, (p) => Deferred.await(p.committed), { discard: true })
      })

    return { write } as const
  }),
  dependencies: [AuditRepo.Default]
}) {}
