import { Cause, Effect, Exit, FiberId, Option, Runtime } from "effect"
import type { Unavailable } from "../src/domain/Errors"
import { type AuditInsert, storableAuditRow } from "../src/repos/AuditInsert"
import { AuditRepo, MAX_INSERT_ROWS } from "../src/repos/AuditRepo"
import { type StatementRefused, storeFailureOf } from "../src/repos/StoreErrors"
import { StorePool } from "./StorePool"

const RETRY_CONCURRENCY = 4

type WriteFailure = Unavailable | StatementRefused

/** Whether the store answered and refused the rows themselves, rather than failing to answer. */
const refusedByStore = (exit: Exit.Exit<void, WriteFailure>) =>
  Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (error) => error._tag === "StatementRefused")

interface Pending {
  readonly row: AuditInsert
  /** Called once, with how the row's commit ended. */
  readonly settle: (exit: Exit.Exit<void, WriteFailure>) => void
}

/**
 * Group commit for the audit log: callers wait until their row is durably committed, and every row
 * queued while one INSERT is in flight goes out together in the next one.
 */
export class AuditWriter extends Effect.Service<AuditWriter>()("sluice/AuditWriter", {
  scoped: Effect.gen(function* () {
    const repo = yield* AuditRepo
    const pool = yield* StorePool
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const log = (entry: Effect.Effect<void>) => void runFork(entry)

    // One INSERT on the store's pool itself, in plain code: the SqlClient's per-statement work cost as much as the rest of a commit (bench/README.md).
    const insert = (batch: ReadonlyArray<Pending>, done: (exit: Exit.Exit<void, WriteFailure>) => void) => {
      try {
        const { name, text, values } = repo.insertStatement(batch.map((pending) => pending.row))
        pool.query({ ...(name === undefined ? {} : { name }), text, values: values as Array<unknown> }, (error: Error | undefined) => {
          if (error === undefined || error === null) return done(Exit.void)
          const { failure, error: logged } = storeFailureOf("audit log", error)
          if (failure._tag === "Unavailable") log(Effect.logWarning("audit log: store error", logged))
          done(Exit.fail(failure))
        })
      } catch (error) {
        // A statement that throws while it is made fails its batch, not the writer.
        done(Exit.die(error))
      }
    }
    const settle = (batch: ReadonlyArray<Pending>, exit: Exit.Exit<void, WriteFailure>) => {
      if (Exit.isFailure(exit)) log(Effect.logError("audit row failed", exit.cause))
      for (const pending of batch) {
        try {
          pending.settle(exit)
        } catch (error) {
          // A caller that fails as it is told costs its own answer only: the rest of the batch is told, and the writer goes on.
          log(Effect.logError("an audit row's caller failed as it was told how its commit ended", error))
        }
      }
    }

    // A batch the store refused is retried row by row: one bad row fails only its own caller. A store that did not answer fails the whole batch at once.
    const commit = (batch: ReadonlyArray<Pending>, done: () => void) =>
      insert(batch, (exit) => {
        if (Exit.isSuccess(exit) || batch.length === 1 || !refusedByStore(exit)) {
          settle(batch, exit)
          return done()
        }
        log(Effect.logWarning("audit batch failed; retrying its rows one by one", exit.cause))
        let started = 0
        let open = batch.length
        const more = () => {
          while (started < batch.length && started - (batch.length - open) < RETRY_CONCURRENCY) {
            const pending = batch[started++]!
            insert([pending], (alone) => {
              settle([pending], alone)
              if (--open === 0) done()
              else more()
            })
          }
        }
        more()
      })

    // The queue and the commit in flight, in plain code: no effect per batch or per row (a fiber loop over a Queue cost a third of a millisecond per commit).
    let queued: Array<Pending> = []
    let committing = false
    let scheduled = false
    let stopped = false
    let drained: (() => void) | undefined
    const next = () => {
      scheduled = false
      if (committing) return
      if (queued.length === 0) return drained?.()
      committing = true
      const batch = queued.length <= MAX_INSERT_ROWS ? queued : queued.slice(0, MAX_INSERT_ROWS)
      queued = queued.length <= MAX_INSERT_ROWS ? [] : queued.slice(MAX_INSERT_ROWS)
      commit(batch, () => {
        committing = false
        next()
      })
    }
    // The first row of a batch waits for the rest of this turn of the event loop: requests answered together commit together.
    const schedule = () => {
      if (committing || scheduled) return
      scheduled = true
      setImmediate(next)
    }
    // Whatever is queued or in flight is written before the writer's scope closes; rows offered from now on are refused at once.
    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        stopped = true
        drained = () => resume(Effect.void)
        if (!committing && !scheduled) next()
      })
    )

    /**
     * Queues rows for the next commit (queued together, so they share it), each made storable first,
     * and calls `done` once every row's commit has ended: success, or the first row's failure in
     * order (settled row by row before, so a refused row never leaves its neighbours' commits in
     * flight). Plain code: what a request path without a fiber calls.
     */
    const append = (rows: ReadonlyArray<AuditInsert>, done: (exit: Exit.Exit<void, WriteFailure>) => void) => {
      // Every row is made storable before any is queued: a row that cannot be leaves the others unwritten too.
      const storable = rows.map(storableAuditRow)
      // A writer that has stopped takes no more rows: told at once rather than left waiting.
      if (stopped) return done(Exit.interrupt(FiberId.none))
      const exits: Array<Exit.Exit<void, WriteFailure> | undefined> = storable.map(() => undefined)
      let open = storable.length
      if (open === 0) return done(Exit.void)
      storable.forEach((row, i) => {
        const settle = (exit: Exit.Exit<void, WriteFailure>) => {
          if (exits[i] !== undefined) return
          exits[i] = exit
          if (--open === 0) done(exits.find((settled) => settled !== undefined && Exit.isFailure(settled)) ?? Exit.void)
        }
        queued.push({ row, settle })
      })
      schedule()
    }

    /** `append` as an effect: succeeds once every row is committed; fails as the first row that was not. */
    const write = (rows: ReadonlyArray<AuditInsert>) => Effect.async<void, WriteFailure>((resume) => append(rows, resume))

    return { append, write } as const
  }),
  dependencies: [AuditRepo.Default]
}) {}
