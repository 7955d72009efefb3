import { randomUUID } from "node:crypto"
import { WorkflowEngine } from "@effect/workflow"
import { Effect, type Stream } from "effect"
import { AgentRunWorkflow, type Decision, decisionFor, startAgentRun } from "../jobs/AgentRunWorkflow"
import { decideOnce, resumeJob } from "../jobs/JobDecisions"
import { JobRuntime } from "../../layers/JobRuntime"
import { type AgentRun, AGENT_RUN_KIND, DEFAULT_MAX_TURNS, type PatchAgentRun, type RunStatus, type StartAgentRun, TERMINAL_STATUSES } from "../domain/AgentRun"
import { Conflict, Forbidden, InsufficientScope, NotFound, Unavailable } from "../domain/Errors"
import { decodeCursor, pageOf, TimeAndIdCursor } from "../domain/Pagination"
import type { JobEvent, TextDelta } from "../domain/JobEvent"
import type { Principal } from "../domain/Principal"
import { mayReadRows, WITHHELD_FOR_ROWS } from "../domain/Visibility"
import { redactSqlLiterals } from "../governance/RedactSql"
import { AgentRunsRepo, type StoredRun } from "../repos/AgentRunsRepo"
import { JobEventsRepo } from "../repos/JobEventsRepo"
import { Connections } from "./Connections"
import { EvalAccess } from "./EvalAccess"
import { RunEventsFeed } from "./RunEventsFeed"

// What the model wrote or a tool returned, per event type: it can quote rows.
const MODEL_WORDS: Readonly<Record<string, ReadonlyArray<string>>> = {
  model_call: ["text"],
  tool_call: ["result"],
  question: ["question"],
  completed: ["answer"]
}
const redacted = (sql: unknown) => (typeof sql === "string" ? redactSqlLiterals(sql, null) : sql)

/**
 * One rule for every view of a run: a caller without the query scope sees what the run did (steps,
 * tools, row counts, masked columns, tokens, cost) but not what the model wrote or a tool returned,
 * and SQL with its literals redacted, as in the audit log.
 */
const eventFor = (principal: Principal) => (event: JobEvent): JobEvent => {
  if (mayReadRows(principal)) return event
  const data: Record<string, unknown> = { ...event.data }
  for (const field of MODEL_WORDS[event.type] ?? []) {
    if (field in data) {
      delete data[field]
      data[`${field}_withheld`] = WITHHELD_FOR_ROWS
    }
  }
  if ("sql" in data) data["sql"] = redacted(data["sql"])
  return { ...event, data }
}

const runFor = (principal: Principal) => ({ run }: StoredRun): AgentRun => {
  if (mayReadRows(principal)) return run
  const pending =
    run.pending === null ? null : run.pending.kind === "question" ? { ...run.pending, question: "" } : { ...run.pending, sql: redactSqlLiterals(run.pending.sql, null) }
  return { ...run, answer: null, pending, withheld: run.pending?.kind === "question" ? ["answer", "pending.question"] : ["answer"] }
}

const notFound = (id: string) => new NotFound({ message: `There is no agent run ${id}` })

/** Agent runs as their owners start, follow, answer and cancel them; the runs themselves are durable jobs (AgentRunJob). */
export class AgentRuns extends Effect.Service<AgentRuns>()("sluice/AgentRuns", {
  effect: Effect.gen(function* () {
    const repo = yield* AgentRunsRepo
    const jobEvents = yield* JobEventsRepo
    const connections = yield* Connections
    const feed = yield* RunEventsFeed
    const evalAccess = yield* EvalAccess
    const { engine } = yield* JobRuntime
    const withEngine = Effect.provideService(WorkflowEngine.WorkflowEngine, engine)

    /** The run, where this caller may see it: an evaluation task's run is its evaluation's staff's alone (any other caller is told there is none). */
    const find = (principal: Principal, id: string) =>
      repo.find(principal.orgId, id).pipe(
        Effect.flatMap((found) =>
          found === null
            ? Effect.fail(notFound(id))
            : evalAccess.maySee(principal, found.evalRunId)
              ? Effect.succeed(found)
              : Effect.fail(notFound(id))
        )
      )

    const launch = (principal: Principal, id: string) => startAgentRun({ runId: id, orgId: principal.orgId }).pipe(withEngine)

    const start = Effect.fn("AgentRuns.start")(function* (principal: Principal, input: StartAgentRun, conversationId: string | null = null) {
      if (input.connection_name !== undefined) yield* connections.get(principal, input.connection_name)
      const id = `run_${randomUUID().replaceAll("-", "")}`
      yield* repo.insert({
        id,
        org_id: principal.orgId,
        user_id: principal.userId,
        principal_kind: principal.kind,
        key_id: principal.keyId,
        prompt: input.prompt,
        connection_name: input.connection_name ?? null,
        conversation_id: conversationId,
        max_turns: input.max_turns ?? DEFAULT_MAX_TURNS,
        model: null,
        interactive: true,
        eval_run_id: null
      })
      yield* launch(principal, id).pipe(
        // A run whose job could not be started is not left queued: it fails (if the store takes that write).
        Effect.tapError(() => repo.finish(principal.orgId, id, { status: "failed", error: { code: "not_started", message: "The run's job could not be started" } }).pipe(Effect.ignore)),
        Effect.mapError(() => new Unavailable({ message: "The job runtime is unavailable; the run was not started" }))
      )
      return runFor(principal)(yield* find(principal, id))
    })

    const get = Effect.fn("AgentRuns.get")(function* (principal: Principal, id: string) {
      return runFor(principal)(yield* find(principal, id))
    })

    /** A conversation's runs, oldest first. */
    const ofConversation = Effect.fn("AgentRuns.ofConversation")(function* (principal: Principal, conversationId: string) {
      return (yield* repo.ofConversation(principal.orgId, conversationId)).map(runFor(principal))
    })

    const list = Effect.fn("AgentRuns.list")(function* (principal: Principal, params: { limit?: number | undefined; cursor?: string | undefined }) {
      const limit = params.limit ?? 50
      const before = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, TimeAndIdCursor)
      const rows = yield* repo.page(principal.orgId, before, limit + 1)
      return pageOf(
        rows.map(runFor(principal)),
        limit,
        (run: AgentRun) => [run.created_at.toISOString(), run.id]
      )
    })

    /** The events of a conversation's runs, in order, as this caller may see them. */
    const conversationEvents = Effect.fn("AgentRuns.conversationEvents")(function* (principal: Principal, conversationId: string, limit: number) {
      const rows = yield* repo.conversationEvents(principal.orgId, conversationId, limit)
      return rows.map((row) => ({ ...eventFor(principal)(row), run_id: row.run_id }))
    })

    const events = Effect.fn("AgentRuns.events")(function* (principal: Principal, id: string, afterSeq: number, limit: number) {
      yield* find(principal, id)
      return (yield* jobEvents.events(AGENT_RUN_KIND, principal.orgId, id, afterSeq, limit)).map(eventFor(principal))
    })

    /**
     * A run's events from `afterSeq` to its end, as they are written, with the model's text as it
     * streams in between (to callers who may see what the model writes).
     */
    const follow = (principal: Principal, id: string, afterSeq: number): Stream.Stream<JobEvent | TextDelta, NotFound | Unavailable> =>
      feed.follow(AGENT_RUN_KIND, principal.orgId, id, afterSeq, {
        ended: Effect.map(find(principal, id), ({ run }) => TERMINAL_STATUSES.has(run.status)),
        shown: eventFor(principal),
        withText: mayReadRows(principal)
      })

    /** Hands the waiting run the user's decision (or its cancellation) at the step it waits at. */
    const resume = (principal: Principal, runId: string, step: string, decision: Decision) =>
      resumeJob(AgentRunWorkflow, { runId, orgId: principal.orgId }, decisionFor(step), decision).pipe(withEngine)

    /** Takes the decision the run waits for at `step`, once (the job kit's decideOnce). */
    const decide = (principal: Principal, id: string, waitingAs: RunStatus, step: string, decision: Decision) =>
      decideOnce({ noun: "run", claim: repo.claimDecision(principal.orgId, id, waitingAs, step), resume: resume(principal, id, step, decision) })

    const patch = Effect.fn("AgentRuns.patch")(function* (principal: Principal, id: string, body: PatchAgentRun) {
      const { run, userId } = yield* find(principal, id)
      if (userId !== principal.userId && principal.role !== "admin") {
        return yield* new Forbidden({ message: "Only who started the run, or an admin of the organization, may cancel, answer or approve it" })
      }
      // Spending on a query is a person's decision, as on the chat routes: a key made only to drive the agent cannot approve its run's queries.
      if ((body.action === "approve" || body.action === "decline") && !principal.scopes.includes("write")) {
        return yield* new InsufficientScope({ message: "Approving or declining a query needs the write scope", required_scope: "write" })
      }
      if (TERMINAL_STATUSES.has(run.status)) return yield* new Conflict({ message: `The run has ended (${run.status})` })
      switch (body.action) {
        case "cancel": {
          yield* repo.requestCancel(principal.orgId, id)
          if (run.pending !== null) yield* resume(principal, id, run.pending.step, { kind: "cancelled" })
          // A run still queued may have no job (its start failed half-way): starting it again ends it at its first step.
          if (run.status === "queued") yield* launch(principal, id).pipe(Effect.mapError(() => new Unavailable({ message: "The job runtime is unavailable" })))
          break
        }
        case "answer": {
          if (run.status !== "waiting_for_user" || run.pending?.kind !== "question") {
            return yield* new Conflict({ message: `The run is not waiting for an answer (it is ${run.status})` })
          }
          yield* decide(principal, id, "waiting_for_user", run.pending.step, { kind: "answer", text: body.answer })
          break
        }
        case "approve":
        case "decline": {
          if (run.status !== "waiting_for_query_approval" || run.pending?.kind !== "query_approval") {
            return yield* new Conflict({ message: `The run is not waiting for a query's approval (it is ${run.status})` })
          }
          yield* decide(principal, id, "waiting_for_query_approval", run.pending.step, { kind: body.action })
          break
        }
      }
      return runFor(principal)(yield* find(principal, id))
    })

    return { start, get, ofConversation, conversationEvents, list, events, follow, patch } as const
  }),
  dependencies: [AgentRunsRepo.Default, JobEventsRepo.Default, Connections.Default, JobRuntime.Default, RunEventsFeed.Default, EvalAccess.Default]
}) {}
