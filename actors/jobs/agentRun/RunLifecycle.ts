import { Effect } from "effect"
import { LanguageModels } from "../../../layers/LanguageModels"
import { AGENT_RUN_KIND, TERMINAL_STATUSES } from "../../../src/domain/AgentRun"
import type { Unavailable } from "../../../src/domain/Errors"
import type { OrgId } from "../../../src/domain/Ids"
import type { Principal } from "../../../src/domain/Principal"
import type { Scope } from "../../../src/domain/Scope"
import { mayReadRows, WITHHELD_FOR_ROWS } from "../../../src/domain/Visibility"
import { RunStopped } from "../../../src/jobs/AgentRunWorkflow"
import { guardedStep } from "../../../src/jobs/GuardedStep"
import { JobSteps } from "../../../src/jobs/JobSteps"
import { AgentRunsRepo, type StoredRun } from "../../../src/repos/AgentRunsRepo"
import { ActingPrincipals } from "../../../src/services/ActingPrincipals"
import { RunEventsFeed } from "../../../src/services/RunEventsFeed"

// A run reads, queries, proposes knowledge (write: workspace content, never a database) and, where its credential may, runs code in
// sandboxes (execute: their queries go through the gate as the run's do); whatever else its credential may do.
const RUN_SCOPES: ReadonlySet<Scope> = new Set(["read", "query", "write", "execute"])


// Earlier exchanges of a conversation the model is given, newest kept, each answer cut to a length.
const HISTORY_EXCHANGES = 20
const HISTORY_ANSWER_CHARS = 8_000

/**
 * Work a step must not do twice when `guarded` does the step again over a store outage (a model
 * call, a tool call): the first success of the work it is given is what every later try gets.
 * Make one per step, outside the effect `guarded` retries.
 */
export const firstSuccess = <A>() => {
  let kept: { readonly value: A } | undefined
  const once = <E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => (kept !== undefined ? Effect.succeed(kept.value) : Effect.tap(work, (value) => Effect.sync(() => (kept = { value })))))
  /** The first success, if an earlier try had one. */
  return Object.assign(once, { kept: (): A | undefined => kept?.value })
}

/**
 * A run's beginning and end, and what every step of it shares: its events written once, the run
 * loaded while it has not ended, who it acts as at this step, and a failure turned into its end.
 */
export class RunLifecycle extends Effect.Service<RunLifecycle>()("sluice/RunLifecycle", {
  effect: Effect.gen(function* () {
    const repo = yield* AgentRunsRepo
    const acting = yield* ActingPrincipals
    const models = yield* LanguageModels
    const feed = yield* RunEventsFeed
    const jobSteps = yield* JobSteps

    /** Writes a step's event (once), and wakes this process's followers of the run. */
    const writeEvent: typeof repo.appendEvent = (orgId, runId, ...rest) => repo.appendEvent(orgId, runId, ...rest).pipe(Effect.tap(() => feed.published(AGENT_RUN_KIND, runId)))

    /** The run's last event and its final row, written together, then its followers told. */
    const end = (orgId: OrgId, runId: string, outcome: Parameters<typeof repo.end>[2], data: Record<string, unknown>) =>
      Effect.zipRight(repo.end(orgId, runId, outcome, data), feed.published(AGENT_RUN_KIND, runId))

    /** Ends the run (its last event with its status) and stops the workflow. */
    const stop = (orgId: OrgId, runId: string, status: "failed" | "cancelled", code: string, message: string) =>
      end(orgId, runId, status === "failed" ? { status, error: { code, message } } : { status }, { code, message }).pipe(
        Effect.zipRight(jobSteps.forget(runId)),
        Effect.orDie,
        Effect.zipRight(Effect.fail(new RunStopped({ status, code, message })))
      )

    /**
     * A step's effect, done again while the store is out (a step is written to be done again), and
     * its failures and defects turned into the run's failure (recorded), so no run is left running:
     * a store out for good as `unavailable`, anything else as `internal_error`.
     */
    const guarded = <A, E extends { readonly _tag: string }>(orgId: OrgId, runId: string, effect: Effect.Effect<A, E>): Effect.Effect<A, RunStopped> =>
      guardedStep(
        {
          tag: "RunStopped",
          fail: ({ outage }, cause) =>
            outage
              ? Effect.zipRight(Effect.logError("agent run step failed: the store stayed unavailable", cause), stop(orgId, runId, "failed", "unavailable", "The gateway's store stayed unavailable; the run stopped"))
              : Effect.zipRight(Effect.logError("agent run step failed", cause), stop(orgId, runId, "failed", "internal_error", "The run failed; the gateway's log has the details"))
        },
        effect
      )

    /** The run as stored, while it has not ended: a step done again after its run ended (it failed or was cancelled elsewhere) does nothing. */
    const load = (orgId: OrgId, runId: string) =>
      Effect.flatMap(repo.find(orgId, runId), (found) =>
        found === null
          ? Effect.fail(new RunStopped({ status: "failed", code: "not_found", message: "The run is gone" }))
          : TERMINAL_STATUSES.has(found.run.status)
            ? Effect.fail(new RunStopped({ status: found.run.status === "cancelled" ? "cancelled" : "failed", code: "ended", message: `The run has ended (${found.run.status})` }))
            : Effect.succeed(found)
      )

    /** Who the run acts as at this step: its credential checked again (a deleted key stops it), scopes capped to read and query. */
    const actingAs = (stored: StoredRun): Effect.Effect<Principal, RunStopped | Unavailable> =>
      stored.cancelRequested
        ? stop(stored.orgId, stored.run.id, "cancelled", "cancelled", "The run was cancelled")
        : acting.actingAs(stored, RUN_SCOPES, "run").pipe(Effect.catchTag("CredentialGone", (gone) => stop(stored.orgId, stored.run.id, "failed", "credential_revoked", gone.message)))

    /** Marks the run running and returns what it was asked. */
    const begin = (orgId: OrgId, runId: string) =>
      guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          const stored = yield* load(orgId, runId)
          const principal = yield* actingAs(stored)
          yield* repo.setStatus(orgId, runId, "running", { model: models.model })
          const history = stored.run.conversation_id === null ? [] : yield* repo.exchangesBefore(orgId, stored.run.conversation_id, runId, HISTORY_EXCHANGES)
          // The conversation's earlier answers are what a model wrote after reading rows: a run that may not read rows is not given them.
          const answerOf = (answer: string) => (mayReadRows(principal) ? answer.slice(0, HISTORY_ANSWER_CHARS) : `(withheld: ${WITHHELD_FOR_ROWS})`)
          return {
            prompt: stored.run.prompt,
            connectionName: stored.run.connection_name,
            maxTurns: stored.run.max_turns,
            interactive: stored.interactive,
            history: history.map((exchange) => ({ prompt: exchange.prompt, answer: answerOf(exchange.answer) }))
          }
        })
      )

    /** The model answered without asking for a tool: the run ends with its answer. */
    const complete = (orgId: OrgId, runId: string, answer: string) =>
      guarded(
        orgId,
        runId,
        Effect.gen(function* () {
          yield* end(orgId, runId, { status: "completed", answer }, { answer })
          yield* jobSteps.forget(runId)
        })
      )

    const fail = (orgId: OrgId, runId: string, status: "failed" | "cancelled", code: string, message: string) => guarded(orgId, runId, stop(orgId, runId, status, code, message))

    return { writeEvent, stop, guarded, load, actingAs, begin, complete, fail } as const
  }),
  dependencies: [AgentRunsRepo.Default, ActingPrincipals.Default, LanguageModels.Default, RunEventsFeed.Default, JobSteps.Default]
}) {}
