import { randomUUID } from "node:crypto"
import { DurableDeferred, WorkflowEngine } from "@effect/workflow"
import { Chunk, Duration, Effect, Exit, Option, Schema, Stream } from "effect"
import { AgentRunWorkflow, type Answer, answerFor } from "../../actors/jobs/AgentRunWorkflow"
import { JobRuntime } from "../../layers/JobRuntime"
import { type AgentRun, type AgentRunEvent, DEFAULT_MAX_TURNS, type PatchAgentRun, type StartAgentRun, TERMINAL_STATUSES } from "../domain/AgentRun"
import { Conflict, NotFound } from "../domain/Errors"
import { decodeCursor, pageOf } from "../domain/Pagination"
import type { Principal } from "../domain/Principal"
import { AgentRunsRepo } from "../repos/AgentRunsRepo"
import { Connections } from "./Connections"
import { storeUnavailable } from "./StoreUnavailable"

const storeDown = storeUnavailable("agent runs")
const Cursor = Schema.Tuple(Schema.String, Schema.String)
const FOLLOW_BATCH = 200
const FOLLOW_POLL = Duration.millis(250)
const END_EVENTS: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"])
/** A tool call's result holds the rows it read: those are for callers who may query, as the rows of a query are. */
const visibleTo = (principal: Principal) => (event: AgentRunEvent): AgentRunEvent => {
  if (principal.scopes.includes("query") || !("result" in event.data)) return event
  const { result: _rows, ...data } = event.data
  return { ...event, data: { ...data, result_withheld: "the query scope is needed to see what a tool returned" } }
}

const notFound = (id: string) => new NotFound({ message: `There is no agent run ${id}` })

/** Agent runs as their owners start, follow, answer and cancel them; the runs themselves are durable jobs (AgentRunJob). */
export class AgentRuns extends Effect.Service<AgentRuns>()("sluice/AgentRuns", {
  effect: Effect.gen(function* () {
    const repo = yield* AgentRunsRepo
    const connections = yield* Connections
    const { engine } = yield* JobRuntime
    const withEngine = Effect.provideService(WorkflowEngine.WorkflowEngine, engine)

    const find = (principal: Principal, id: string) =>
      repo.find(principal.orgId, id).pipe(
        storeDown,
        Effect.flatMap((found) => (found === null ? Effect.fail(notFound(id)) : Effect.succeed(found)))
      )

    const start = Effect.fn("AgentRuns.start")(function* (principal: Principal, input: StartAgentRun) {
      if (input.connection_name !== undefined) yield* connections.get(principal, input.connection_name)
      const id = `run_${randomUUID().replaceAll("-", "")}`
      yield* repo
        .insert({
          id,
          org_id: principal.orgId,
          user_id: principal.userId,
          principal_kind: principal.kind,
          key_id: principal.keyId,
          prompt: input.prompt,
          connection_name: input.connection_name ?? null,
          max_turns: input.max_turns ?? DEFAULT_MAX_TURNS,
          model: null
        })
        .pipe(storeDown)
      yield* AgentRunWorkflow.execute({ runId: id, orgId: principal.orgId }, { discard: true }).pipe(withEngine)
      return (yield* find(principal, id)).run
    })

    const get = Effect.fn("AgentRuns.get")(function* (principal: Principal, id: string) {
      return (yield* find(principal, id)).run
    })

    const list = Effect.fn("AgentRuns.list")(function* (principal: Principal, params: { limit?: number | undefined; cursor?: string | undefined }) {
      const limit = params.limit ?? 50
      const before = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, Cursor)
      const rows = yield* repo.page(principal.orgId, before, limit + 1).pipe(storeDown)
      return pageOf(
        rows.map((row) => row.run),
        limit,
        (run: AgentRun) => [run.created_at.toISOString(), run.id]
      )
    })

    const events = Effect.fn("AgentRuns.events")(function* (principal: Principal, id: string, afterSeq: number, limit: number) {
      yield* find(principal, id)
      return (yield* repo.events(principal.orgId, id, afterSeq, limit).pipe(storeDown)).map(visibleTo(principal))
    })

    /**
     * The run's events from after `afterSeq` as they are written, ending with its last (a run's end
     * is its last event).
     */
    const follow = (principal: Principal, id: string, afterSeq: number) =>
      Stream.paginateChunkEffect(afterSeq, (after) =>
        repo.events(principal.orgId, id, after, FOLLOW_BATCH).pipe(
          storeDown,
          Effect.flatMap((batch) => {
            const last = batch.at(-1)
            if (last !== undefined) {
              const next = END_EVENTS.has(last.type) ? Option.none() : Option.some(last.seq)
              return Effect.succeed([Chunk.unsafeFromArray(batch.map(visibleTo(principal))), next] as const)
            }
            // Nothing new: wait, unless the run ended without an end event to send.
            return Effect.flatMap(find(principal, id), ({ run }) =>
              TERMINAL_STATUSES.has(run.status)
                ? Effect.succeed([Chunk.empty<AgentRunEvent>(), Option.none()] as const)
                : Effect.as(Effect.sleep(FOLLOW_POLL), [Chunk.empty<AgentRunEvent>(), Option.some(after)] as const)
            )
          })
        )
      )

    /** Hands the waiting run its answer (or its cancellation) at the step it asked at. */
    const resume = (principal: Principal, runId: string, step: string, value: typeof Answer.Type) =>
      Effect.flatMap(DurableDeferred.tokenFromPayload(answerFor(step), { workflow: AgentRunWorkflow, payload: { runId, orgId: principal.orgId } }), (token) =>
        DurableDeferred.done(answerFor(step), { token, exit: Exit.succeed(value) })
      ).pipe(withEngine)

    const patch = Effect.fn("AgentRuns.patch")(function* (principal: Principal, id: string, body: PatchAgentRun) {
      const { run } = yield* find(principal, id)
      if (TERMINAL_STATUSES.has(run.status)) return yield* new Conflict({ message: `The run has ended (${run.status})` })
      switch (body.action) {
        case "cancel": {
          yield* repo.requestCancel(principal.orgId, id).pipe(storeDown)
          if (run.pending?.kind === "question") yield* resume(principal, id, run.pending.step, { kind: "cancelled" })
          break
        }
        case "answer": {
          if (run.status !== "waiting_for_user" || run.pending?.kind !== "question") {
            return yield* new Conflict({ message: `The run is not waiting for an answer (it is ${run.status})` })
          }
          yield* resume(principal, id, run.pending.step, { kind: "answer", text: body.answer })
          break
        }
      }
      return (yield* find(principal, id)).run
    })

    return { start, get, list, events, follow, patch } as const
  }),
  dependencies: [AgentRunsRepo.Default, Connections.Default, JobRuntime.Default]
}) {}
