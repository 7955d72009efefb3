import { createHash, randomUUID } from "node:crypto"
import { WorkflowEngine } from "@effect/workflow"
import { Cause, Data, Effect, Either, identity, Option, Schema, Stream } from "effect"
import { AppConfig } from "../../../layers/AppConfig"
import { JobRuntime } from "../../../layers/JobRuntime"
import { ObjectStore } from "../../../layers/ObjectStore"
import { AGENT_RUN_KIND, DEFAULT_MAX_TURNS, TERMINAL_STATUSES } from "../../../src/domain/AgentRun"
import type { EvalTask } from "../../../src/domain/EvalSet"
import { attemptOf, EVAL_BRANCH_PROJECT, runBranchName, type TaskPhase, taskBranchName, taskEvidenceKey, taskKeyName } from "../../../src/domain/EvalRun"
import type { Cell, Table } from "../../../src/domain/grading/Tables"
import { gradeStored, StoredEvidence } from "../../../src/domain/grading/StoredEvidence"
import type { Unavailable } from "../../../src/domain/Errors"
import type { KeyId, OrgId } from "../../../src/domain/Ids"
import type { Principal } from "../../../src/domain/Principal"
import { withoutSecrets } from "../../../src/domain/Text"
import { startAgentRun } from "../../../src/jobs/AgentRunWorkflow"
import type { EvalRunStopped, TaskOutcome } from "../../../src/jobs/EvalRunWorkflow"
import { AgentRunsRepo } from "../../../src/repos/AgentRunsRepo"
import { EvalRunsRepo } from "../../../src/repos/EvalRunsRepo"
import { JobEventsRepo } from "../../../src/repos/JobEventsRepo"
import { isStoreOutage } from "../../../src/repos/StoreErrors"
import { ActingPrincipals } from "../../../src/services/ActingPrincipals"
import { ApiKeys } from "../../../src/services/ApiKeys"
import { Audit } from "../../../src/services/Audit"
import { auditRow, newAuditDraft } from "../../../src/services/AuditDraft"
import { BranchStatements, type ModelWanted } from "../../../src/services/BranchStatements"
import { DbBranches } from "../../../src/services/DbBranches"
import { EvalQueries } from "../../../src/services/EvalQueries"
import type { LoadedEvalSet } from "../../../src/services/EvalSets"
import { RunEventsFeed } from "../../../src/services/RunEventsFeed"
import { Sandboxes } from "../../../src/services/Sandboxes"
import { EvalSandboxes } from "../../../src/services/EvalSandboxes"
import type { ScriptPhase } from "../../../src/domain/EvalSandbox"
import { EvalRunLifecycle } from "./EvalRunLifecycle"

const DEFAULT_TASK_TIMEOUT_SECONDS = 300

class TaskUnusable extends Data.TaggedError("TaskUnusable")<{ readonly message: string }> {}
// A task key outlives no run: revoked when its task ends, and expiring on its own a day after it was made.
const TASK_KEY_HOURS = 24
const GOLD_SQL_ROWS = 10_000
/** A task's stored evidence (gold tables, the agent's answer and result) is at most this many characters of JSON. */
const MAX_EVIDENCE_CHARS = 16_000_000
const TRANSCRIPT_EVENTS = 10_000
const SCRIPT_MAX_BYTES = 1_000_000
// What a task's key may do: read and query (its branch, where it has one, is a grant of its own).
const TASK_SCOPES: ReadonlySet<"read" | "query"> = new Set(["read", "query"])
/** The rows of each model a write task's capture keeps, by its capture mode. */
const CAPTURED_ROWS = { fingerprint: 0, sample: 100, full: 10_000 } as const
const SCRIPT_LOG_CHARS = 1_000_000

/** How a task's script runs: Python in a sandbox of its own (any task), SQL in its branch (a write task's); anything else does not. */
const scriptKind = (task: EvalTask, file: string) => (file.endsWith(".py") ? "python" : file.endsWith(".sql") && task.class === "write" ? "sql" : null)
const scriptsRunHere = (task: EvalTask) => [task.setup, task.teardown].every((file) => file === undefined || scriptKind(task, file) !== null)

/** What a write task's checks read of each model it builds (and of each it names in `builds`). */
const modelsWanted = (task: EvalTask): ReadonlyArray<ModelWanted> => {
  const wanted = new Map<string, { grains: Array<ReadonlyArray<string>>; sums: Array<string> }>()
  const of = (model: string) => wanted.get(model) ?? wanted.set(model, { grains: [], sums: [] }).get(model)!
  for (const model of task.builds ?? []) of(model)
  for (const check of task.checks) {
    if (!("model" in check)) continue
    const entry = of(check.model)
    if (check.type === "grain") entry.grains.push(check.columns)
    if (check.type === "sum") entry.sums.push(check.column)
  }
  return [...wanted].map(([model, { grains, sums }]) => ({ model, grains, sums }))
}

/** The agent run a task starts: one per task of a run, whichever runner starts it. */
export const agentRunIdOf = (runId: string, taskId: string) => `run_${createHash("sha256").update(`${runId}/${taskId}`).digest("hex").slice(0, 32)}`

const cellOf = (value: unknown): Cell =>
  typeof value === "number" && !Number.isFinite(value)
    ? String(value)
    : value === null || value === undefined || typeof value === "string" || typeof value === "number" || typeof value === "boolean"
    ? (value ?? null)
    : value instanceof Date
      ? value.toISOString()
      : typeof value === "bigint"
        ? value.toString()
        : JSON.stringify(value)

const tableOfResult = (result: { readonly columns: ReadonlyArray<{ readonly name: string }>; readonly rows: ReadonlyArray<ReadonlyArray<unknown>> }): Table => ({
  columns: result.columns.map((c) => c.name),
  rows: result.rows.map((row) => row.map(cellOf))
})

/**
 * A task's phases as durable steps: provisioning (its key), setup, agent (the built-in agent as the
 * task's key, waited for), grading (evidence gathered and stored, then graded from what was stored),
 * capture (the transcript), teardown (its key revoked, its branch deleted). A task that cannot go on is graded ERROR
 * with why, never counted as an answer; only the run's own end stops it otherwise.
 */
export class EvalTaskSteps extends Effect.Service<EvalTaskSteps>()("sluice/EvalTaskSteps", {
  effect: Effect.gen(function* () {
    const lifecycle = yield* EvalRunLifecycle
    const repo = yield* EvalRunsRepo
    const agentRuns = yield* AgentRunsRepo
    const jobEvents = yield* JobEventsRepo
    const keys = yield* ApiKeys
    const acting = yield* ActingPrincipals
    const evalQueries = yield* EvalQueries
    const objects = yield* ObjectStore
    const { engine } = yield* JobRuntime
    const feed = yield* RunEventsFeed
    const branches = yield* DbBranches
    const statements = yield* BranchStatements
    const sandboxes = yield* Sandboxes
    const liveSandboxes = yield* EvalSandboxes
    const config = yield* AppConfig
    const audit = yield* Audit

    /** The set's task an attempt (its name) is of. */
    const taskOf = (set: { readonly manifest: { readonly tasks: ReadonlyArray<EvalTask> } }, name: string) => {
      const { taskId } = attemptOf(name)
      return Option.fromNullable(set.manifest.tasks.find((task) => task.id === taskId)).pipe(
        Effect.orElseFail(() => new TaskUnusable({ message: `the eval set no longer holds task ${taskId}` }))
      )
    }
    const rowOf = (orgId: OrgId, runId: string, taskId: string) =>
      Effect.flatMap(repo.task(orgId, runId, taskId), (row) => (row === null ? Effect.dieMessage(`eval run ${runId} has no task row ${taskId}`) : Effect.succeed(row)))

    /** The task is ERROR for `detail`, with no evidence kept (a regrade leaves it as it is). */
    const gradeFailure = (orgId: OrgId, runId: string, taskId: string, detail: string) => repo.grade(orgId, runId, taskId, { verdict: "ERROR", checks: [], detail })

    /** Records the task's ERROR: a phase could not be done (the gateway's log has why). */
    const failedPhase = (orgId: OrgId, runId: string, taskId: string, phase: TaskPhase) => (cause: Cause.Cause<unknown>) =>
      Effect.zipRight(
        Effect.logError(`eval run ${runId}: task ${taskId}'s ${phase} phase failed`, cause),
        gradeFailure(orgId, runId, taskId, `The task's ${phase} phase failed; the gateway's log has the details`)
      )

    /**
     * A task step's effect, done again while the store is out; the run's end goes through, any other
     * failure is the task's ERROR (then `fallback`), so one task's trouble is not its run's.
     */
    const taskGuarded = <A, E extends { readonly _tag: string }>(orgId: OrgId, runId: string, taskId: string, phase: TaskPhase, fallback: A, effect: Effect.Effect<A, E>): Effect.Effect<A, EvalRunStopped> =>
      lifecycle.guarded(
        orgId,
        runId,
        effect.pipe(
          Effect.catchAllCause((cause): Effect.Effect<A, E | Unavailable> => {
            if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
            const failure = Cause.failureOption(cause)
            // The run's end, and a store that is out (waited for, then the run's failure), are the run's, not the task's.
            if (Option.exists(failure, (e) => isStoreOutage(e) || e._tag === "EvalRunStopped")) return Effect.failCause(cause)
            const unusable = Option.filter(failure, (e): e is E & TaskUnusable => e._tag === "TaskUnusable")
            if (Option.isSome(unusable)) return Effect.as(gradeFailure(orgId, runId, taskId, unusable.value.message), fallback)
            return Effect.as(failedPhase(orgId, runId, taskId, phase)(cause), fallback)
          })
        )
      )

    /** Who acts as a task's key (checked again: a revoked key acts as no one). */
    const asTaskKey = (orgId: OrgId, userId: Principal["userId"], keyId: KeyId) =>
      acting.actingAs({ orgId, userId, principalKind: "api_key", keyId }, TASK_SCOPES, "eval task")

    // A run's own copy of the warehouse is made once, by the first of its write tasks to need it.
    const makingRunBranch = yield* Effect.makeSemaphore(1)

    /** A branch of the run's (owned by it), made again from `parent` where one of its name was left by an earlier try. */
    const freshBranch = (principal: Principal, connection: string, runId: string, name: string, parent: string) =>
      Effect.gen(function* () {
        yield* branches.remove(principal, connection, EVAL_BRANCH_PROJECT, name).pipe(Effect.catchTag("NotFound", () => Effect.void))
        yield* branches.create(principal, connection, EVAL_BRANCH_PROJECT, { name, parent, owner_job: runId })
      })

    /** The run's copy of the warehouse, made if it is not there yet. */
    const runBranch = (principal: Principal, connection: string, runId: string) =>
      makingRunBranch.withPermits(1)(
        Effect.gen(function* () {
          const name = runBranchName(runId)
          const made = (yield* branches.list(principal, connection, EVAL_BRANCH_PROJECT)).items.find((branch) => branch.name === name)
          if (made?.status === "ready") return
          yield* freshBranch(principal, connection, runId, name, "main")
        })
      )

    /**
     * A task's setup or teardown script (a file of the set) as its key: Python in a sandbox of its
     * own limited to SP_EVAL_MEMORY_LIMIT (one killed for memory is an `oom_killed` event of the
     * run), or a write task's SQL in its branch. What it printed is its phase's log; its failure
     * fails the task with why.
     */
    const runScript = (orgId: OrgId, runId: string, taskId: string, task: EvalTask, phase: ScriptPhase, files: LoadedEvalSet["files"], principal: Principal, connection: string) =>
      Effect.gen(function* () {
        const file = phase === "setup" ? task.setup : task.teardown
        if (file === undefined) return
        const backend = yield* objects.backend
        const log = (text: string) => backend.put(taskEvidenceKey(orgId, runId, taskId, `${phase}.log`), Buffer.from(text.slice(0, SCRIPT_LOG_CHARS)), "text/plain")
        const failed = (why: string) => Effect.zipRight(log(`${file}: ${why}\n`), new TaskUnusable({ message: `The task's ${phase} ${file} failed: ${why}` }))
        const text = yield* Effect.promise(() => files.read(file, SCRIPT_MAX_BYTES))
        if (text === null) return yield* failed(`it is missing or larger than ${SCRIPT_MAX_BYTES} bytes`)
        const timeoutSeconds = task.timeout_seconds ?? DEFAULT_TASK_TIMEOUT_SECONDS
        if (scriptKind(task, file) === "sql") {
          // Within the task's time, as its agent is (a setup that sleeps does not hold its run: attack 38 F4).
          const started = performance.now()
          const ran = yield* Effect.either(statements.run(principal, text, timeoutSeconds))
          // On the audit log as what it is, SQL run as the task's key in its branch (attack 38 F5); its literals redacted.
          const draft = newAuditDraft(randomUUID(), "eval_script", principal)
          draft.connection = connection
          draft.sql = text
          draft.details = { eval_run_id: runId, task_id: taskId, phase, script: file, branch: principal.branch?.name ?? null }
          yield* audit.record("postgresql", auditRow(draft, { route: `/api/evals/runs/${runId}`, durationMs: performance.now() - started, outcome: Either.isRight(ran) ? "success" : "error" }))
          if (Either.isLeft(ran)) return yield* failed(ran.left.message)
          return yield* log(`${file}: ${ran.right.command} done${ran.right.row_count === null ? "" : ` (${ran.right.row_count} rows)`}\n`)
        }
        const ran = yield* liveSandboxes.track({ orgId, runId, taskId, phase, script: file, memoryMb: config.evalMemoryLimitMb }, (live) =>
          Effect.gen(function* () {
            const made = yield* Effect.either(sandboxes.create(principal, { connection_name: connection, label: `eval ${runId} task ${taskId} ${phase}`, timeout_seconds: timeoutSeconds }, { memoryMb: config.evalMemoryLimitMb }))
            if (Either.isLeft(made)) {
              live.event("failed_to_start", made.left.message)
              return Either.left(`its sandbox could not start: ${made.left.message}`)
            }
            live.started(made.right.id)
            // Killed for memory as its cgroup says, never as the script says or sends (attack 39 F2, attack 40 F3).
            const executed = yield* sandboxes.run(principal, made.right.id, { code: text }, undefined, live.output).pipe(
              Effect.ensuring(Effect.ignore(sandboxes.remove(principal, made.right.id))),
              Effect.either
            )
            if (Either.isLeft(executed)) return Either.left(executed.left.message)
            const { result, killedForMemory } = executed.right
            if (killedForMemory) live.event("oom_killed", `it went over SP_EVAL_MEMORY_LIMIT (${config.evalMemoryLimitMb} MiB)`)
            else live.event("exited", result.success ? "the script ended" : `the script failed: ${(result.error ?? "it ended with an error").slice(0, 500)}`)
            return Either.right(executed.right)
          })
        )
        if (Either.isLeft(ran)) return yield* failed(ran.left)
        const { result: { stdout, stderr, error, success }, killedForMemory } = ran.right
        yield* log([stdout, stderr, error === null ? "" : `error: ${error}\n`].filter((part) => part !== "").join(""))
        if (success) return
        if (killedForMemory) {
          yield* repo.appendEvent(orgId, runId, `task/${taskId}/${phase}/oom`, "oom_killed", { task_id: taskId, phase, script: file, memory_limit_mb: config.evalMemoryLimitMb })
          return yield* failed(`oom_killed: it went over SP_EVAL_MEMORY_LIMIT (${config.evalMemoryLimitMb} MiB)`)
        }
        return yield* failed(error ?? "it ended with an error")
      })

    /**
     * The task's own key: read and query on the run's pinned connection alone, for the agent and
     * the gold queries; for a write task, also its branch (a copy of the run's copy of the
     * warehouse), where the key may write and its setup SQL runs. Recorded once all is made, so a
     * try that stopped part way is made again from the start.
     */
    const provision = (orgId: OrgId, runId: string, taskId: string) =>
      taskGuarded(
        orgId,
        runId,
        taskId,
        "provisioning",
        false,
        Effect.gen(function* () {
          const { stored, principal, set } = yield* lifecycle.context(orgId, runId)
          const row = yield* rowOf(orgId, runId, taskId)
          if (row.key_id !== null) return true
          const task = yield* taskOf(set, taskId)
          // A task whose scripts this gateway does not run is not attempted (its agent step says so): nothing is made for it.
          if (!scriptsRunHere(task)) return true
          const connection = stored.run.settings.connection_name
          // Named by the task's place in the run (task ids may share their first 50 characters); a key an earlier try made but could not record goes first (attack 37 F10).
          const name = taskKeyName(runId, row.ordinal)
          yield* keys.revokeNamed(orgId, name)
          const branch = task.class === "write" ? { project: EVAL_BRANCH_PROJECT, name: taskBranchName(runId, row.ordinal) } : undefined
          if (branch !== undefined) {
            const unmade = (e: { readonly message: string }) => new TaskUnusable({ message: `The task's branch could not be made: ${e.message}` })
            yield* runBranch(principal, connection, runId).pipe(Effect.mapError(unmade))
            yield* freshBranch(principal, connection, runId, branch.name, runBranchName(runId)).pipe(Effect.mapError(unmade))
          }
          const key = yield* keys.create(
            principal,
            { name, scopes: [...TASK_SCOPES], expires_at: new Date(Date.now() + TASK_KEY_HOURS * 3600_000) },
            { connections: [connection], ...(branch === undefined ? {} : { branch }), knowledgeOverlay: stored.run.settings.doc_ids }
          )
          const made = { key_id: key.id, ...(branch === undefined ? {} : { branch_name: branch.name }) }
          const setUpAs = yield* asTaskKey(orgId, stored.userId, key.id)
          const setup = yield* Effect.either(
            scriptsRunHere(task) && task.setup !== undefined
              ? Effect.zipRight(repo.setPhase(orgId, runId, taskId, "setup"), runScript(orgId, runId, taskId, task, "setup", set.files, setUpAs, connection))
              : Effect.void
          )
          if (!(yield* repo.setPhase(orgId, runId, taskId, "provisioning", made))) {
            yield* keys.revoke(orgId, key.id)
            return yield* lifecycle.load(orgId, runId).pipe(Effect.as(false))
          }
          // Recorded with what it made, so its teardown frees them.
          if (Either.isLeft(setup)) return yield* setup.left
          return true
        })
      )

    /** The task as the task's key: what the agent and its gold queries act as. */
    const taskPrincipal = (orgId: OrgId, runId: string, taskId: string, userId: Principal["userId"]) =>
      Effect.gen(function* () {
        const row = yield* rowOf(orgId, runId, taskId)
        if (row.key_id === null) return yield* new TaskUnusable({ message: "the task's key is gone" })
        return yield* asTaskKey(orgId, userId, row.key_id)
      })

    /** Setup, then the built-in agent on the task's prompt as the task's key, waited for to its end or the task's timeout. */
    const agent = (orgId: OrgId, runId: string, taskId: string) =>
      taskGuarded(
        orgId,
        runId,
        taskId,
        "agent",
        { agentRunId: null, failure: "The task's agent phase failed" } as TaskOutcome,
        Effect.gen(function* () {
          const { stored, set } = yield* lifecycle.context(orgId, runId)
          const task = yield* taskOf(set, taskId)
          if (!scriptsRunHere(task)) {
            return { agentRunId: null, failure: "A task's scripts are Python (.py), or SQL (.sql) for a write task, which runs it in its branch: the task was not attempted" }
          }
          const row = yield* rowOf(orgId, runId, taskId)
          if (row.key_id === null) return { agentRunId: null, failure: "The task has no key: its provisioning failed" }
          const agentRunId = agentRunIdOf(runId, taskId)
          yield* repo.setPhase(orgId, runId, taskId, "agent", { agent_run_id: agentRunId })
          if ((yield* agentRuns.find(orgId, agentRunId)) === null) {
            const preamble = stored.run.settings.prompt_preamble.trim()
            yield* agentRuns.insert({
              id: agentRunId,
              org_id: orgId,
              user_id: stored.userId,
              principal_kind: "api_key",
              key_id: row.key_id,
              prompt: preamble.length > 0 ? `${preamble}\n\n${task.prompt}` : task.prompt,
              connection_name: stored.run.settings.connection_name,
              conversation_id: null,
              max_turns: DEFAULT_MAX_TURNS,
              model: null,
              // No one answers an evaluation's agent, and no one may steer it by answering.
              interactive: false,
              // The evaluation's: its staff alone see it, read it or cancel it.
              eval_run_id: runId
            })
          }
          yield* startAgentRun({ runId: agentRunId, orgId }).pipe(Effect.provideService(WorkflowEngine.WorkflowEngine, engine))
          const timeoutSeconds = task.timeout_seconds ?? set.manifest.defaults?.timeout_seconds ?? DEFAULT_TASK_TIMEOUT_SECONDS
          const finished = Effect.map(agentRuns.find(orgId, agentRunId), (found) => found === null || TERMINAL_STATUSES.has(found.run.status))
          const created = (yield* agentRuns.find(orgId, agentRunId))?.run.created_at ?? new Date()
          // Measured from the agent run's creation, so a task resumed on another runner keeps its deadline.
          const remainingMs = Math.max(0, created.getTime() + timeoutSeconds * 1000 - Date.now())
          // Its events' feed wakes this wait when the run ends here, or within one poll of the store when it ends on another runner.
          yield* feed.follow(AGENT_RUN_KIND, orgId, agentRunId, 0, { ended: finished, shown: identity, withText: false }).pipe(Stream.runDrain, Effect.timeoutOption(remainingMs))
          const found = yield* agentRuns.find(orgId, agentRunId)
          if (found === null) return { agentRunId, failure: "The task's agent run is gone" }
          const run = found.run
          if (TERMINAL_STATUSES.has(run.status)) {
            return { agentRunId, failure: run.status === "completed" ? null : `The agent's run ${run.status}${run.error === null ? "" : `: ${run.error.message}`}` }
          }
          yield* agentRuns.requestCancel(orgId, agentRunId)
          return { agentRunId, failure: `The agent did not answer within the task's ${timeoutSeconds} s` }
        })
      )

    /**
     * The rows the agent's last successful query returns, read again whole through the governed
     * executor as the task's key (at most 10,000): what its tool result showed the model was cut to
     * fit a prompt (400 rows, long cells shortened, markup escaped), so it is not what is graded.
     */
    const lastResultOf = (orgId: OrgId, runId: string, taskId: string, agentRunId: string, principal: Principal) =>
      Effect.gen(function* () {
        const events = yield* jobEvents.events(AGENT_RUN_KIND, orgId, agentRunId, 0, TRANSCRIPT_EVENTS)
        const last = events.findLast((e) => e.type === "tool_call" && typeof e.data["sql"] === "string" && typeof e.data["connection"] === "string" && e.data["is_error"] !== true)
        if (last === undefined) return null
        const ran = yield* evalQueries.run(principal, last.data["connection"] as string, last.data["sql"] as string, GOLD_SQL_ROWS, { eval_run_id: runId, task_id: taskId })
        return Either.isRight(ran) ? tableOfResult(ran.right) : null
      })

    /** The gold tables of the task's table checks: inline, from the set's CSV, or by its SQL through the governed executor as the task's key. */
    const goldTables = (runId: string, taskId: string, task: EvalTask, gold: ReadonlyMap<string, Table>, connection: string, principal: Principal) =>
      Effect.gen(function* () {
        const tables: Record<string, Table> = {}
        let goldChars = 0
        for (const check of task.checks) {
          if (check.type !== "table") continue
          if (check.gold !== undefined) tables[check.name] = check.gold
          else if (check.gold_csv !== undefined) {
            const csv = gold.get(check.gold_csv)
            if (csv === undefined) return Either.left(`The gold CSV ${check.gold_csv} of check ${check.name} is missing`)
            tables[check.name] = csv
          } else if (check.gold_sql !== undefined) {
            const ran = yield* evalQueries.run(principal, connection, check.gold_sql, GOLD_SQL_ROWS, { eval_run_id: runId, task_id: taskId })
            if (Either.isLeft(ran)) return Either.left(`The gold SQL of check ${check.name} failed: ${(ran.left as { message?: string }).message ?? "it could not run"}`)
            if (ran.right.completeness === "truncated") return Either.left(`The gold SQL of check ${check.name} returned more than ${GOLD_SQL_ROWS} rows`)
            tables[check.name] = tableOfResult(ran.right)
          }
          // Counted as each gold table comes, so a task's gold never holds more than the cap in memory.
          goldChars += JSON.stringify(tables[check.name]).length
          if (goldChars > MAX_EVIDENCE_CHARS) return Either.left(`The task's gold tables are larger than ${MAX_EVIDENCE_CHARS / 1_000_000} MB: it cannot be graded`)
        }
        return Either.right(tables)
      })

    /** Gathers the task's evidence and stores it, then grades from what was stored. */
    const grade = (orgId: OrgId, runId: string, taskId: string, outcome: TaskOutcome) =>
      taskGuarded(
        orgId,
        runId,
        taskId,
        "grading",
        undefined,
        Effect.gen(function* () {
          const { stored, set } = yield* lifecycle.context(orgId, runId)
          const task = yield* taskOf(set, taskId)
          yield* repo.setPhase(orgId, runId, taskId, "grading")
          const answer = outcome.agentRunId === null ? null : ((yield* agentRuns.find(orgId, outcome.agentRunId))?.run.answer ?? null)
          // A phase that failed for a reason it recorded (its setup, its branch) keeps it.
          const row = yield* rowOf(orgId, runId, taskId)
          let failure = outcome.failure !== null && row.verdict === "ERROR" && row.detail !== null ? row.detail : outcome.failure
          let gold: Record<string, Table> = {}
          let lastResult: Table | null = null
          let models: StoredEvidence["evidence"]["models"] = {}
          if (failure === null) {
            const principal = yield* taskPrincipal(orgId, runId, taskId, stored.userId)
            if (task.class === "write") {
              const mode = task.capture ?? set.manifest.defaults?.capture ?? "fingerprint"
              const captured = yield* Effect.either(statements.capture(principal, modelsWanted(task), CAPTURED_ROWS[mode]))
              if (Either.isLeft(captured)) failure = `The models in the task's branch could not be read: ${captured.left.message}`
              else {
                models = captured.right.models
                // What the models held, kept as evidence (not graded): their fingerprint, and a sample or the whole of their rows.
                const captures = withoutSecrets(JSON.stringify({ mode, models, rows: captured.right.rows }, (_, value) => (typeof value === "bigint" ? value.toString() : value)))
                const backend = yield* objects.backend
                if (captures.length <= MAX_EVIDENCE_CHARS) yield* backend.put(taskEvidenceKey(orgId, runId, taskId, "captures.json"), Buffer.from(captures), "application/json")
                else yield* backend.put(taskEvidenceKey(orgId, runId, taskId, "captures.json"), Buffer.from(JSON.stringify({ mode, models, rows: null, left_out: `the rows came to more than ${MAX_EVIDENCE_CHARS / 1_000_000} MB` })), "application/json")
              }
            }
            const tables = yield* goldTables(runId, taskId, task, set.goldCsv, stored.run.settings.connection_name, principal)
            if (Either.isLeft(tables)) failure = tables.left
            else gold = tables.right
            const readsLastResult = task.checks.some((check) => check.type === "table" && check.source !== "answer")
            if (readsLastResult && outcome.agentRunId !== null) lastResult = yield* lastResultOf(orgId, runId, taskId, outcome.agentRunId, principal)
          }
          const evidence: StoredEvidence = {
            task,
            defaults: set.manifest.defaults?.tolerance === undefined ? {} : { tolerance: set.manifest.defaults.tolerance },
            evidence: { question: task.prompt, answer, last_result: lastResult, gold_tables: gold, models, failure }
          }
          const evidenceJson = JSON.stringify(yield* Schema.encode(StoredEvidence)(evidence))
          if (evidenceJson.length > MAX_EVIDENCE_CHARS) {
            return yield* gradeFailure(orgId, runId, taskId, `The task's evidence is larger than ${MAX_EVIDENCE_CHARS / 1_000_000} MB (its gold tables or the agent's result): it cannot be graded`)
          }
          const backend = yield* objects.backend
          yield* backend.put(taskEvidenceKey(orgId, runId, taskId, "evidence.json"), Buffer.from(evidenceJson), "application/json")
          // Graded from what was stored, read back as a regrade reads it (a value JSON cannot hold, such as NaN, is graded as stored).
          const graded = gradeStored(yield* Schema.decodeUnknown(Schema.parseJson(StoredEvidence))(evidenceJson))
          yield* repo.grade(orgId, runId, taskId, { verdict: graded.verdict, checks: graded.checks, detail: graded.detail })
        })
      )

    /** The agent's transcript (its run's events), secrets redacted, kept with the task's evidence. */
    const capture = (orgId: OrgId, runId: string, taskId: string, outcome: TaskOutcome) =>
      taskGuarded(
        orgId,
        runId,
        taskId,
        "capture",
        undefined,
        Effect.gen(function* () {
          yield* lifecycle.load(orgId, runId)
          yield* repo.setPhase(orgId, runId, taskId, "capture")
          if (outcome.agentRunId === null) return
          const events = yield* jobEvents.events(AGENT_RUN_KIND, orgId, outcome.agentRunId, 0, TRANSCRIPT_EVENTS)
          const transcript = withoutSecrets(JSON.stringify({ agent_run_id: outcome.agentRunId, events }, null, 1))
          const backend = yield* objects.backend
          yield* backend.put(taskEvidenceKey(orgId, runId, taskId, "transcript.json"), Buffer.from(transcript), "application/json")
        })
      )

    /** The task's key revoked and its branch deleted (one that cannot be, the run's end or the branch reaper deletes), the task done. */
    const teardown = (orgId: OrgId, runId: string, taskId: string) =>
      lifecycle.guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          const { stored, principal, set } = yield* lifecycle.context(orgId, runId)
          yield* repo.setPhase(orgId, runId, taskId, "teardown")
          const row = yield* rowOf(orgId, runId, taskId)
          // Its script runs while its key and branch are there; what it printed or why it failed is its log alone (the task is graded).
          const task = yield* Effect.option(taskOf(set, taskId))
          if (row.key_id !== null && Option.isSome(task) && task.value.teardown !== undefined && scriptsRunHere(task.value)) {
            const as = yield* Effect.either(asTaskKey(orgId, stored.userId, row.key_id))
            if (Either.isRight(as)) yield* Effect.ignore(runScript(orgId, runId, taskId, task.value, "teardown", set.files, as.right, stored.run.settings.connection_name))
          }
          if (row.key_id !== null) yield* keys.revoke(orgId, row.key_id)
          if (row.branch_name !== null) {
            yield* branches.remove(principal, stored.run.settings.connection_name, EVAL_BRANCH_PROJECT, row.branch_name).pipe(
              Effect.catchAll((error) => (isStoreOutage(error) ? Effect.fail(error) : Effect.logWarning(`eval run ${runId}: task ${taskId}'s branch is left to the run's end`, error)))
            )
          }
          yield* repo.taskDone(orgId, runId, taskId)
        })
      )

    /**
     * The run's copy of the warehouse, made before any task runs when the run has write tasks: a
     * copy waits for no session on the warehouse, and the run's read tasks open some once they
     * begin. One not made here is tried again by the first write task, which says why it fails.
     */
    const prepare = (orgId: OrgId, runId: string, taskIds: ReadonlyArray<string>) =>
      lifecycle.guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          const { stored, principal, set } = yield* lifecycle.context(orgId, runId)
          const running = new Set(taskIds.map((name) => attemptOf(name).taskId))
          const writes = set.manifest.tasks.some((task) => task.class === "write" && running.has(task.id) && scriptsRunHere(task))
          if (!writes) return
          yield* runBranch(principal, stored.run.settings.connection_name, runId).pipe(
            Effect.catchAll((error) => (isStoreOutage(error) ? Effect.fail(error) : Effect.logWarning(`eval run ${runId}: its copy of the warehouse is left to its first write task`, error)))
          )
        })
      )

    return { prepare, provision, agent, grade, capture, teardown } as const
  }),
  dependencies: [EvalRunLifecycle.Default, EvalRunsRepo.Default, AgentRunsRepo.Default, JobEventsRepo.Default, ApiKeys.Default, ActingPrincipals.Default, EvalQueries.Default, ObjectStore.Default, JobRuntime.Default, RunEventsFeed.Default, DbBranches.Default, BranchStatements.Default, Sandboxes.Default, EvalSandboxes.Default, Audit.Default]
}) {}
