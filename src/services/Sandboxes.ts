import { randomBytes, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Clock, Duration, Effect, Either, Fiber, Runtime } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { DEFAULT_LIMITS, type OutputListener, type SandboxProcess, SandboxProcesses } from "../../layers/SandboxProcesses"
import { CapacityReached, Conflict, Gone, NotAvailableHere, NotFound, Unavailable } from "../domain/Errors"
import { type OrgId, SandboxId } from "../domain/Ids"
import { decodeCursor, pageOf, TimeAndIdCursor } from "../domain/Pagination"
import type { Principal } from "../domain/Principal"
import { isStarter, starterOf } from "../domain/Starter"
import { type CreateSandbox, type ExecuteCode, type ExecuteResult, MAX_RUNNING_SANDBOXES, type Sandbox } from "../domain/Sandbox"
import type { Scope } from "../domain/Scope"
import { type SandboxRow, SandboxesRepo } from "../repos/SandboxesRepo"
import { type ChildReport, type CodeSource, CodeQueries } from "./CodeQueries"
import { keyedLocks } from "./KeyedLocks"
import { Connections } from "./Connections"

// What a sandbox's code may do with data: read and query, whatever else its creator may do.
export const CODE_SCOPES: ReadonlySet<Scope> = new Set(["read", "query"])
const DEFAULT_TIMEOUT_SECONDS = 300

/** A sandbox whose process runs in this gateway process. */
interface Live {
  readonly id: SandboxId
  readonly orgId: OrgId
  /** Its record as it was when its process started: what it may do does not change while it runs. */
  readonly row: SandboxRow
  readonly process: SandboxProcess
  /** What its code's queries act as and within, with their counters. */
  readonly source: CodeSource
  /** What it has done, kept here while it runs and written to its record after each call. */
  executions: number
  /** One thing at a time: an execute, a snapshot, a stop. */
  readonly lock: Effect.Semaphore
  lastUsedMs: number
  executing: boolean
  /** Where the execute in progress reports its queries' audit facts (its request's or tool call's children). */
  report: ChildReport | undefined
  /** Who calls the execute in progress: its code's queries may do no more than they may. */
  caller: Principal | undefined
  idle: Fiber.RuntimeFiber<unknown> | undefined
}

const countersOf = (sandbox: Live) => ({ executions: sandbox.executions, ...sandbox.source.counters })

const toIso = (date: Date | null) => (date === null ? null : date.toISOString())

/**
 * Sandboxes: a Python process next to the data for a user's code, its state carried between calls,
 * snapshotted when idle and resumed on the next call, reaching data only through the gate with read
 * and query at most, as the credential that created it (checked again for code left running between
 * calls). Only that credential sees or uses it. The record is in the store; the process is this
 * gateway's.
 */
export class Sandboxes extends Effect.Service<Sandboxes>()("sluice/Sandboxes", {
  scoped: Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* SandboxesRepo
    const processes = yield* SandboxProcesses
    const connections = yield* Connections
    const codeQueries = yield* CodeQueries
    const runtime = yield* Effect.runtime<never>()
    const host = processes.holder
    const storageRoot = path.join(config.dataDir, "sandboxes")
    const live = new Map<SandboxId, Live>()
    const idleMs = config.sandboxIdleSnapshotSeconds * 1000
    const limits = { ...DEFAULT_LIMITS, memoryMb: config.sandboxMemoryMb, diskMb: config.sandboxDiskMb }

    const storageOf = (row: Pick<SandboxRow, "org_id" | "id">) => path.join(storageRoot, row.org_id.replace(/[^A-Za-z0-9_-]/g, "_"), row.id)

    const view = (row: SandboxRow): Sandbox => {
      const running = live.get(row.id)
      const status = running?.executing === true ? "running" : row.status
      const counters = running === undefined ? row : { executions: running.executions, queries: running.source.counters.queries, spent_usd: running.source.counters.spentUsd }
      return {
        id: row.id,
        label: row.label,
        status,
        connection_name: row.connection_name,
        row_limit: row.row_limit,
        budget_usd: row.budget_usd,
        spent_usd: counters.spent_usd,
        timeout_seconds: row.timeout_seconds,
        created_by: row.created_by,
        executions: counters.executions,
        queries: counters.queries,
        unpicklable: row.unpicklable,
        snapshot_bytes: row.snapshot_bytes,
        error: row.error,
        created_at: row.created_at.toISOString(),
        last_used_at: row.last_used_at.toISOString(),
        snapshotted_at: toIso(row.snapshotted_at),
        expires_at: row.status === "snapshotted" && row.snapshotted_at !== null ? new Date(row.snapshotted_at.getTime() + config.sandboxSnapshotExpirationSeconds * 1000).toISOString() : null
      }
    }

    const notAvailable = new NotAvailableHere({
      message: "Sandboxes run on the gateway's own host, which cloud mode does not offer until a remote sandbox provider is configured"
    })

    /** The caller's own sandbox: one another key (even the same user's), user or org started is not found. */
    const owned = (principal: Principal, id: string) =>
      Effect.gen(function* () {
        const row = yield* repo.find(principal.orgId, SandboxId.make(id))
        if (row === null || !isStarter(principal, row)) return yield* new NotFound({ message: `No sandbox ${id}` })
        return row
      })

    /** Starts the sandbox's process (from its snapshot when it has one) and holds it here. */
    const startProcess = (row: SandboxRow, fromSnapshot: boolean) =>
      Effect.gen(function* () {
        const token = randomBytes(32).toString("hex")
        let holder: Live | undefined
        const source: CodeSource = {
          kind: "sandbox",
          id: row.id,
          credential: { orgId: row.org_id, userId: row.user_id, principalKind: row.principal_kind, keyId: row.key_id },
          scopes: row.scopes,
          connectionName: row.connection_name,
          rowLimit: row.row_limit,
          budgetUsd: row.budget_usd,
          token: Buffer.from(token),
          counters: { queries: row.queries, spentUsd: row.spent_usd },
          budgetLock: yield* Effect.makeSemaphore(1),
          running: () => holder !== undefined && live.get(row.id) === holder,
          report: () => holder?.report,
          caller: () => holder?.caller
        }
        const started = yield* processes
          .start({
            limits: row.memory_mb === null ? limits : { ...limits, memoryMb: row.memory_mb },
            token,
            onData: (request) => Runtime.runPromise(runtime)(codeQueries.answer(source, request)),
            ...(fromSnapshot ? { from: storageOf(row) } : {})
          })
          .pipe(
            Effect.catchTags({
              NoFreeSlot: () => new CapacityReached({ message: `This gateway runs at most ${MAX_RUNNING_SANDBOXES} sandboxes at once; delete one or wait for one to go idle` }),
              SandboxesUnavailable: (error) => new Unavailable({ message: error.message }),
              SandboxProcessEnded: (error) => new Unavailable({ message: `The sandbox could not start: ${error.reason}` })
            })
          )
        const now = yield* Clock.currentTimeMillis
        holder = {
          id: row.id,
          orgId: row.org_id,
          row,
          source,
          executions: row.executions,
          process: started,
          lock: yield* Effect.makeSemaphore(1),
          lastUsedMs: now,
          executing: false,
          report: undefined,
          caller: undefined,
          idle: undefined
        }
        live.set(row.id, holder)
        holder.idle = yield* Effect.forkDaemon(idleWatch(holder, row))
        return holder
      })

    // One change of a sandbox's life at a time: a resume, a snapshot, a delete.
    const inLife = keyedLocks<SandboxId>()
    const removeStorage = (row: Pick<SandboxRow, "org_id" | "id">) => Effect.promise(() => fs.promises.rm(storageOf(row), { recursive: true, force: true }))

    /** Snapshots the sandbox once it has been idle long enough. */
    const idleWatch = (sandbox: Live, row: SandboxRow): Effect.Effect<void> =>
      Effect.gen(function* () {
        while (live.get(sandbox.id) === sandbox) {
          const now = yield* Clock.currentTimeMillis
          const due = sandbox.lastUsedMs + idleMs
          if (now < due || sandbox.executing) {
            yield* Effect.sleep(Duration.millis(Math.max(due - now, 50)))
            continue
          }
          yield* inLife(sandbox.id, sandbox.lock.withPermits(1)(
            Effect.suspend(() => (live.get(sandbox.id) === sandbox && !sandbox.executing ? snapshot(sandbox, row) : Effect.void))
          )).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`snapshotting idle sandbox ${sandbox.id} failed`, cause)))
          return
        }
      })

    /** Saves the sandbox's globals and work directory and ends its process. */
    const snapshot = (sandbox: Live, row: SandboxRow) =>
      Effect.gen(function* () {
        live.delete(sandbox.id)
        const saved = yield* sandbox.process.snapshot(storageOf(row)).pipe(Effect.either)
        if (Either.isLeft(saved)) {
          yield* removeStorage(row)
          yield* repo.change(row.org_id, row.id, { status: "error", error: `Its snapshot failed: ${saved.left.reason}`, host: null })
          return
        }
        const current = yield* repo.find(row.org_id, row.id)
        const unpicklable = [...new Set([...(current?.unpicklable ?? []), ...saved.right.unpicklable])].sort()
        yield* repo.change(row.org_id, row.id, { status: "snapshotted", unpicklable, snapshotBytes: saved.right.bytes, snapshotted: true, host: null, counters: countersOf(sandbox) })
      })

    /** A sandbox of the principal's; `memoryMb` sets its own memory limit (an evaluation task's script), else the gateway's. */
    const create = Effect.fn("Sandboxes.create")(function* (principal: Principal, input: CreateSandbox, options: { readonly memoryMb?: number } = {}) {
      if (!config.selfHosted) return yield* notAvailable
      if (input.connection_name !== undefined) yield* connections.target(principal, input.connection_name)
      if (live.size >= MAX_RUNNING_SANDBOXES) {
        return yield* new CapacityReached({ message: `This gateway runs at most ${MAX_RUNNING_SANDBOXES} sandboxes at once; delete one or wait for one to go idle` })
      }
      const id = SandboxId.make(`sbx_${randomUUID().replace(/-/g, "")}`)
      const row = yield* repo.insert(principal.orgId, {
        id,
        user_id: principal.userId,
        principal_kind: principal.kind,
        key_id: principal.keyId,
        created_by: principal.keyPrefix === null ? `user:${principal.userId}` : `key:${principal.keyPrefix}`,
        scopes: principal.scopes.filter((scope) => CODE_SCOPES.has(scope)),
        label: input.label ?? null,
        connection_name: input.connection_name ?? null,
        row_limit: input.row_limit ?? null,
        budget_usd: input.budget_usd ?? null,
        timeout_seconds: input.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS,
        memory_mb: options.memoryMb ?? null,
        host
      })
      const started = yield* startProcess(row, false).pipe(
        Effect.tapError((error) => repo.change(principal.orgId, id, { status: "error", error: error.message, host: null }))
      )
      const running = yield* repo.change(principal.orgId, id, { status: "idle" })
      if (running === null) {
        yield* started.process.stop
        return yield* new NotFound({ message: `No sandbox ${id}` })
      }
      return view(running)
    })

    const get = Effect.fn("Sandboxes.get")(function* (principal: Principal, id: string) {
      return view(yield* owned(principal, id))
    })

    const list = Effect.fn("Sandboxes.list")(function* (principal: Principal, params: { readonly limit?: number | undefined; readonly cursor?: string | undefined }) {
      const limit = params.limit ?? 50
      const before = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, TimeAndIdCursor)
      const rows = yield* repo.page(principal.orgId, starterOf(principal), before, limit + 1)
      const page = pageOf(rows, limit, (last) => [last.created_at.toISOString(), last.id])
      return { items: page.items.map(view), next_cursor: page.next_cursor }
    })

    /** The sandbox's process, started again from its snapshot when it was snapshotted. */
    const running = (row: SandboxRow) =>
      Effect.gen(function* () {
        const here = live.get(row.id)
        if (here !== undefined) return here
        if (row.status === "snapshotted") {
          if (live.size >= MAX_RUNNING_SANDBOXES) {
            return yield* new CapacityReached({ message: `This gateway runs at most ${MAX_RUNNING_SANDBOXES} sandboxes at once; delete one or wait for one to go idle` })
          }
          const resumed = yield* startProcess(row, true)
          yield* repo.change(row.org_id, row.id, { status: "idle", host, snapshotted: false })
          return resumed
        }
        if (row.status === "stopped" && row.error !== null && row.error.startsWith("Its snapshot expired")) return yield* new Gone({ message: row.error })
        return yield* new Conflict({ message: `The sandbox is ${row.status}${row.error === null ? "" : `: ${row.error}`}; create a new one` })
      })

    /**
     * Runs code in the caller's sandbox; its governed queries report their audit facts to `report`,
     * what it prints goes to `onOutput` as it runs. `killedForMemory`: the process was killed for
     * going over its memory limit, as its cgroup says (never as the code says).
     */
    const run = Effect.fn("Sandboxes.run")(function* (principal: Principal, id: string, input: ExecuteCode, report?: ChildReport, onOutput?: OutputListener) {
      if (!config.selfHosted) return yield* notAvailable
      // A sandbox running here answers from memory; its owner and org never change.
      const here = live.get(SandboxId.make(id))
      const row = here !== undefined && isStarter(principal, here.row) ? here.row : yield* owned(principal, id)
      // Resumed, if it must be, under its life's lock: its record read again there, as a delete or a snapshot left it.
      const sandbox = yield* inLife(row.id, Effect.suspend(() => {
        const held = live.get(row.id)
        return held !== undefined ? Effect.succeed(held) : Effect.flatMap(owned(principal, id), running)
      }))
      return yield* sandbox.lock.withPermits(1)(
        Effect.gen(function* () {
          if (live.get(row.id) !== sandbox) return yield* new Conflict({ message: "The sandbox was snapshotted or stopped while the call waited; call again" })
          sandbox.executing = true
          sandbox.report = report
          sandbox.caller = principal
          const timeoutMs = (input.timeout_seconds ?? row.timeout_seconds) * 1000
          const outcome = yield* sandbox.process.execute(input.code, timeoutMs, onOutput).pipe(
            Effect.ensuring(
              Effect.flatMap(Clock.currentTimeMillis, (now) =>
                Effect.sync(() => {
                  sandbox.executing = false
                  sandbox.report = undefined
                  sandbox.caller = undefined
                  sandbox.lastUsedMs = now
                })
              )
            ),
            Effect.either
          )
          sandbox.executions += 1
          // Ended by a delete meanwhile: its record says stopped, as the delete wrote.
          if (Either.isLeft(outcome) && live.get(row.id) === sandbox) {
            live.delete(row.id)
            yield* removeStorage(row)
            yield* repo.change(row.org_id, row.id, { status: "error", error: outcome.left.reason, host: null, used: true, counters: countersOf(sandbox) })
          }
          if (Either.isLeft(outcome)) {
            const result: ExecuteResult = { success: false, stdout: "", stderr: "", error: `${outcome.left.reason}; its state is lost`, execution_ms: 0, truncated: false }
            return { result, killedForMemory: outcome.left.outOfMemory === true }
          }
          // Written after the answer: the counters are this process's while it holds the sandbox.
          yield* Effect.forkDaemon(repo.change(row.org_id, row.id, { used: true, counters: countersOf(sandbox) }).pipe(Effect.ignoreLogged))
          return { result: outcome.right, killedForMemory: false }
        })
      )
    })

    /** Runs code in the caller's sandbox (`run`), its result alone. */
    const execute = (principal: Principal, id: string, input: ExecuteCode, report?: ChildReport) => Effect.map(run(principal, id, input, report), (ran) => ran.result)

    /** Ends the sandbox's process and deletes its snapshot; its record stays, stopped. */
    const remove = Effect.fn("Sandboxes.remove")(function* (principal: Principal, id: string) {
      const found = yield* owned(principal, id)
      // After a snapshot in progress, never beside it: the snapshot would bring it back.
      return yield* inLife(
        found.id,
        Effect.gen(function* () {
          const row = (yield* repo.find(found.org_id, found.id)) ?? found
          const here = live.get(row.id)
          if (here !== undefined) {
            live.delete(row.id)
            if (here.idle !== undefined) yield* Fiber.interrupt(here.idle)
            yield* here.process.stop
          }
          yield* removeStorage(row)
          const stopped = row.status === "stopped" || row.status === "error" ? row : yield* repo.change(row.org_id, row.id, { status: "stopped", host: null })
          return { id: row.id, deleted: true, status: stopped?.status ?? "stopped" }
        })
      )
    })

    /** Deletes the snapshots older than the expiration; how many. */
    const expireSnapshots = Effect.gen(function* () {
      const expired = yield* repo.expired(config.sandboxSnapshotExpirationSeconds)
      for (const row of expired) {
        yield* Effect.sync(() => fs.rmSync(storageOf(row), { recursive: true, force: true }))
        yield* repo.change(row.org_id, row.id, {
          status: "stopped",
          error: `Its snapshot expired after ${config.sandboxSnapshotExpirationSeconds} s unused and was deleted`,
          snapshotted: false,
          snapshotBytes: null
        })
      }
      return expired.length
    })

    // Sandboxes this process held when it last stopped: their processes are gone; what a snapshot kept is resumed from it.
    const settled = yield* repo.heldBy(host).pipe(Effect.orElseSucceed(() => []))
    for (const row of settled) {
      const kept = fs.existsSync(path.join(storageOf(row), "globals.pickle"))
      yield* repo
        .change(row.org_id, row.id, kept ? { status: "snapshotted", host: null, error: "The gateway restarted: it resumes from its last snapshot" } : { status: "stopped", host: null, error: "The gateway stopped while it ran; it had no snapshot" })
        .pipe(Effect.ignore)
    }

    // A gateway that stops snapshots what it holds, so a restart resumes it.
    yield* Effect.addFinalizer(() =>
      Effect.forEach(
        [...live.values()],
        (sandbox) =>
          Effect.flatMap(repo.find(sandbox.orgId, sandbox.id), (row) => (row === null ? sandbox.process.stop : snapshot(sandbox, row))).pipe(
            Effect.timeout("5 seconds"),
            Effect.catchAllCause(() => sandbox.process.stop)
          ),
        { concurrency: "unbounded", discard: true }
      )
    )

    return { create, get, list, run, execute, remove, expireSnapshots } as const
  }),
  dependencies: [SandboxesRepo.Default, SandboxProcesses.Default, Connections.Default, CodeQueries.Default]
}) {}
