import { randomUUID } from "node:crypto"
import { WorkflowEngine } from "@effect/workflow"
import { Effect, Either, Schema, Stream } from "effect"
import { JobRuntime } from "../../layers/JobRuntime"
import { ObjectStore } from "../../layers/ObjectStore"
import { RUNNER_LABEL } from "../../layers/RunnerIdentity"
import { attemptName, EVAL_RUN_ENDED, EVAL_RUN_KIND, type EvalRun, MAX_RUNS_IN_FLIGHT_PER_PROCESS, MAX_TASK_ATTEMPTS, type StartEvalRun, taskEvidenceKey } from "../domain/EvalRun"
import { gradeStored, StoredEvidence } from "../domain/grading/StoredEvidence"
import { Conflict, InvalidRequest, NotFound, Unavailable } from "../domain/Errors"
import { decodeCursor, pageOf, TimeAndIdCursor } from "../domain/Pagination"
import type { Principal } from "../domain/Principal"
import { startEvalRun } from "../jobs/EvalRunWorkflow"
import { EvalRunsRepo, shownTask } from "../repos/EvalRunsRepo"
import { JobEventsRepo } from "../repos/JobEventsRepo"
import { KnowledgeRepo } from "../repos/KnowledgeRepo"
import { BuildFingerprints } from "./BuildFingerprints"
import { Connections } from "./Connections"
import { EvalAccess } from "./EvalAccess"
import { EvalConfigs } from "./EvalConfigs"
import { EvalSets } from "./EvalSets"

const refused = (message: string) => new InvalidRequest({ message })
const notFound = (id: string) => new NotFound({ message: `There is no eval run ${id}` })

/** Evaluation runs as staff start and follow them; the runs themselves are durable jobs (EvalRunJob). */
export class EvalRuns extends Effect.Service<EvalRuns>()("sluice/EvalRuns", {
  effect: Effect.gen(function* () {
    const repo = yield* EvalRunsRepo
    const knowledgeRepo = yield* KnowledgeRepo
    const jobEvents = yield* JobEventsRepo
    const access = yield* EvalAccess
    const configs = yield* EvalConfigs
    const sets = yield* EvalSets
    const objects = yield* ObjectStore
    const connections = yield* Connections
    const fingerprints = yield* BuildFingerprints
    const { engine } = yield* JobRuntime
    // Counting this process's runs in flight and adding one is done one start at a time.
    const starting = yield* Effect.makeSemaphore(1)

    const find = (principal: Principal, id: string) =>
      Effect.flatMap(repo.find(principal.orgId, id), (found) => (found === null ? Effect.fail(notFound(id)) : Effect.succeed(found)))

    /** Starts a run; `autorun` for a knowledge change's run (the system starts it as the staff member who turned autorun on). */
    const start = Effect.fn("EvalRuns.start")(function* (principal: Principal, input: StartEvalRun, autorun = false) {
      yield* access.allowed(principal)
      const config = yield* configs.current(principal)
      if (config.runner_profile === null) return yield* refused("No runner profile is set: choose the sandbox profile tasks run in with PUT /api/evals/config {runner_profile}")
      yield* objects.backend
      if (config.eval_set === null) return yield* refused("No eval repository is set: set eval_set with PUT /api/evals/config (a folder of a workspace project, or an uploaded archive)")
      const connectionName = input.connection_name ?? config.connection_name
      if (connectionName === null) return yield* refused("No connection is pinned: set connection_name with PUT /api/evals/config, or name one in the run")
      yield* connections.get(principal, connectionName).pipe(Effect.catchTag("NotFound", () => Effect.fail(refused(`The pinned connection ${connectionName} does not exist`))))
      // Overlaid on the live base: proposals (pending) or entries already active; an archived one is no knowledge to evaluate.
      const overlaid: Array<string> = []
      for (const docId of new Set(input.doc_ids ?? [])) {
        const entry = yield* knowledgeRepo.find(principal.orgId, docId)
        if (entry === null) return yield* refused(`doc_ids: there is no knowledge entry ${docId}`)
        if (entry.status === "archived") return yield* refused(`doc_ids: the knowledge entry ${docId} is archived`)
        overlaid.push(`${entry.id}@${entry.version}`)
      }
      const set = yield* sets.load(principal)
      const known = new Set(set.manifest.tasks.map((task) => task.id))
      const unknown = (input.task_ids ?? []).filter((id) => !known.has(id))
      if (unknown.length > 0) return yield* refused(`task_ids: the eval set ${set.ref} has no task ${unknown.slice(0, 5).join(", ")}`)
      const wanted = input.task_ids === undefined ? null : new Set(input.task_ids)
      const maxTasks = input.max_tasks ?? config.max_tasks
      const tasks = set.manifest.tasks.filter((task) => wanted === null || wanted.has(task.id)).slice(0, maxTasks)
      if (tasks.length === 0) return yield* refused(`The eval set ${set.ref} has no tasks to run`)
      const attempts = input.attempts ?? config.attempts
      if (tasks.length * attempts > MAX_TASK_ATTEMPTS) {
        return yield* refused(`${tasks.length} tasks attempted ${attempts} times each is ${tasks.length * attempts} attempts: a run makes at most ${MAX_TASK_ATTEMPTS}`)
      }
      // Refused before the fingerprint's counts, not after them (attack 37 F8); checked again, one start at a time, at the insert.
      const inFlight = yield* repo.inFlightOn(RUNNER_LABEL)
      if (inFlight >= MAX_RUNS_IN_FLIGHT_PER_PROCESS) return yield* new Conflict({ message: "Too many eval runs in flight" })
      const id = `evr_${randomUUID().replaceAll("-", "")}`
      const covers = set.manifest.tasks.flatMap((task) => task.covers ?? [])
      const { fingerprint } = yield* fingerprints.fingerprint(principal, connectionName, covers, id)
      const expected = set.manifest.build_fingerprint
      if (expected !== undefined && expected !== fingerprint) {
        return yield* refused(`The warehouse does not match the eval set's build fingerprint: the set's gold was computed on ${expected}, the warehouse behind ${connectionName} is ${fingerprint}`)
      }
      yield* starting.withPermits(1)(
        Effect.gen(function* () {
          if ((yield* repo.inFlightOn(RUNNER_LABEL)) >= MAX_RUNS_IN_FLIGHT_PER_PROCESS) return yield* new Conflict({ message: "Too many eval runs in flight" })
          yield* repo.insert(
            {
              id,
              org_id: principal.orgId,
              user_id: principal.userId,
              principal_kind: principal.kind,
              key_id: principal.keyId,
              eval_set_ref: set.ref,
              eval_set_source: set.pinned,
              build_fingerprint: fingerprint,
              trigger: autorun ? "knowledge_change" : (input.doc_ids ?? []).length > 0 ? "evaluate_change" : (input.trigger ?? "api"),
              settings: {
                connection_name: connectionName,
                prompt_preamble: input.prompt_preamble ?? config.prompt_preamble,
                max_tasks: maxTasks,
                attempts,
                notify_emails: input.notify_emails ?? config.notify_emails,
                doc_ids: [...new Set(input.doc_ids ?? [])],
                task_ids: input.task_ids ?? null,
                runner_profile: config.runner_profile!,
                model: config.model,
                knowledge: [...new Set([...(yield* knowledgeRepo.liveVersions(principal.orgId)), ...overlaid])].sort()
              },
              total: tasks.length * attempts,
              started_on: RUNNER_LABEL
            },
            // Every task's first attempt before any task's second: a run stopped early has graded each task as often as it could.
            Array.from({ length: attempts }, (_, index) => tasks.map((task) => ({ task_id: attemptName(task.id, index + 1), class: task.class }))).flat()
          )
        })
      )
      yield* startEvalRun({ runId: id, orgId: principal.orgId }).pipe(
        Effect.provideService(WorkflowEngine.WorkflowEngine, engine),
        Effect.tapError(() => repo.finish(principal.orgId, id, { status: "failed", error: { code: "not_started", message: "The run's job could not be started" } }).pipe(Effect.ignore)),
        Effect.mapError(() => new Unavailable({ message: "The job runtime is unavailable; the run was not started" }))
      )
      return (yield* find(principal, id)).run
    })

    const list = Effect.fn("EvalRuns.list")(function* (principal: Principal, params: { limit?: number | undefined; cursor?: string | undefined }) {
      yield* access.allowed(principal)
      const limit = params.limit ?? 50
      const before = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, TimeAndIdCursor)
      const rows = yield* repo.page(principal.orgId, before, limit + 1)
      return pageOf(
        rows.map((row) => row.run),
        limit,
        (run: EvalRun) => [run.created_at.toISOString(), run.id]
      )
    })

    const get = Effect.fn("EvalRuns.get")(function* (principal: Principal, id: string) {
      yield* access.allowed(principal)
      const { run } = yield* find(principal, id)
      return { ...run, tasks: (yield* repo.tasks(principal.orgId, id)).map(shownTask) }
    })

    const progress = Effect.fn("EvalRuns.progress")(function* (principal: Principal, id: string) {
      yield* access.allowed(principal)
      const { run } = yield* find(principal, id)
      const tasks = yield* repo.tasks(principal.orgId, id)
      const since = run.started_at ?? run.created_at
      const until = EVAL_RUN_ENDED.has(run.status) ? (run.ended_at ?? new Date()) : new Date()
      return {
        run_id: run.id,
        status: run.status,
        done: tasks.filter((task) => task.phase === "done").length,
        total: tasks.length,
        active: tasks.filter((task) => task.phase !== "pending" && task.phase !== "done").map((task) => ({ task_id: task.task_id, phase: task.phase })),
        elapsed_seconds: Math.max(0, Math.round((until.getTime() - since.getTime()) / 100) / 10)
      }
    })

    /** The run's events, in order (at most 1,000). */
    const events = Effect.fn("EvalRuns.events")(function* (principal: Principal, id: string) {
      yield* access.allowed(principal)
      yield* find(principal, id)
      return { items: yield* jobEvents.events(EVAL_RUN_KIND, principal.orgId, id, 0, 1000) }
    })

    /** The stored evidence of a task, or null when it has none (it never reached grading). */
    const evidenceOf = (orgId: Principal["orgId"], runId: string, taskId: string) =>
      Effect.gen(function* () {
        const backend = yield* objects.backend
        const found = yield* backend.get(taskEvidenceKey(orgId, runId, taskId, "evidence.json")).pipe(Effect.catchTag("NotFound", () => Effect.succeed(null)))
        if (found === null) return null
        const text = yield* Stream.decodeText(found.body).pipe(Stream.mkString)
        return yield* Schema.decodeUnknown(Schema.parseJson(StoredEvidence))(text).pipe(Effect.either)
      })

    /** Grades a finished run's tasks again from their stored evidence alone: the same evidence gives the same verdicts. */
    const regrade = Effect.fn("EvalRuns.regrade")(function* (principal: Principal, id: string) {
      yield* access.allowed(principal)
      const { run } = yield* find(principal, id)
      if (!EVAL_RUN_ENDED.has(run.status)) return yield* new Conflict({ message: `The run has not ended (it is ${run.status}): regrade it once it has` })
      if (run.evidence_pruned !== null) return yield* new Conflict({ message: "The run's evidence was deleted by retention (only an organization's newest 10 ended runs keep it): it cannot be graded again" })
      for (const task of yield* repo.tasks(principal.orgId, id)) {
        const stored = yield* evidenceOf(principal.orgId, id, task.task_id)
        if (stored === null) continue
        const graded = Either.isRight(stored)
          ? gradeStored(stored.right)
          : { verdict: "ERROR" as const, checks: [], detail: "The task's stored evidence could not be read" }
        yield* repo.grade(principal.orgId, id, task.task_id, { verdict: graded.verdict, checks: graded.checks, detail: graded.detail })
      }
      yield* repo.retally(principal.orgId, id)
      return yield* get(principal, id)
    })

    return { start, list, get, progress, events, regrade } as const
  }),
  dependencies: [EvalRunsRepo.Default, KnowledgeRepo.Default, JobEventsRepo.Default, EvalAccess.Default, EvalConfigs.Default, EvalSets.Default, ObjectStore.Default, Connections.Default, BuildFingerprints.Default, JobRuntime.Default]
}) {}
