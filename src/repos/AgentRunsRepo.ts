import { SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schema } from "effect"
import { type AgentRun, AGENT_RUN_KIND, PendingAsk, RunStatus } from "../domain/AgentRun"
import { KeyId, OrgId, UserId } from "../domain/Ids"
import { JobEvent } from "../domain/JobEvent"
import type { Principal } from "../domain/Principal"
import { appendJobEvent } from "./JobEventsRepo"
import { unbegunJobs } from "./UnbegunJobs"
import { conflictOnDuplicate, storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const RunRow = Schema.Struct({
  id: Schema.String,
  org_id: OrgId,
  user_id: UserId,
  principal_kind: Schema.Literal("api_key", "jwt", "local"),
  key_id: Schema.NullOr(KeyId),
  prompt: Schema.String,
  connection_name: Schema.NullOr(Schema.String),
  conversation_id: Schema.NullOr(Schema.String),
  status: RunStatus,
  model: Schema.NullOr(Schema.String),
  max_turns: Schema.Int,
  turns: Schema.Int,
  // bigint and numeric arrive as text
  input_tokens: Schema.NumberFromString,
  output_tokens: Schema.NumberFromString,
  cost_usd: Schema.NumberFromString,
  answer: Schema.NullOr(Schema.String),
  error_code: Schema.NullOr(Schema.String),
  error_message: Schema.NullOr(Schema.String),
  pending: Schema.NullOr(PendingAsk),
  cancel_requested: Schema.Boolean,
  interactive: Schema.Boolean,
  eval_run_id: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf,
  finished_at: Schema.NullOr(Schema.DateFromSelf)
})
type RunRow = typeof RunRow.Type

/** A run as its owner sees it, and who it acts as. */
export interface StoredRun {
  readonly run: AgentRun
  readonly orgId: OrgId
  readonly userId: UserId
  readonly principalKind: Principal["kind"]
  readonly keyId: KeyId | null
  readonly cancelRequested: boolean
  /** Whether it may ask its user a question (an evaluation task's agent may not). */
  readonly interactive: boolean
  /** The evaluation run it is a task of: the evaluation's staff alone see it. */
  readonly evalRunId: string | null
}

const stored = (row: RunRow): StoredRun => ({
  orgId: row.org_id,
  userId: row.user_id,
  principalKind: row.principal_kind,
  keyId: row.key_id,
  cancelRequested: row.cancel_requested,
  interactive: row.interactive,
  evalRunId: row.eval_run_id,
  run: {
    id: row.id,
    status: row.status,
    prompt: row.prompt,
    connection_name: row.connection_name,
    conversation_id: row.conversation_id,
    model: row.model,
    max_turns: row.max_turns,
    turns: row.turns,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    cost_usd: row.cost_usd,
    answer: row.answer,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? "" },
    pending: row.pending,
    withheld: [],
    created_at: row.created_at,
    updated_at: row.updated_at,
    finished_at: row.finished_at
  }
})

const NewRun = RunRow.pick("id", "org_id", "user_id", "principal_kind", "key_id", "prompt", "connection_name", "conversation_id", "max_turns", "model", "interactive", "eval_run_id")
const EventData = JobEvent.fields.data
const Count = Schema.Struct({ n: Schema.Number })
const Exchange = Schema.Struct({ prompt: Schema.String, answer: Schema.String })
const RunEvent = Schema.Struct({ ...JobEvent.fields, created_at: Schema.DateFromSelf, run_id: Schema.String })

/** What one step of a run adds to its totals. */
export interface StepUsage {
  readonly turns: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly costUsd: number
}

const NO_USAGE: StepUsage = { turns: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 }

/** Agent runs and what their events say, per org. */
export class AgentRunsRepo extends Effect.Service<AgentRunsRepo>()("sluice/AgentRunsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("agent runs")
    const runRows = Schema.decodeUnknown(Schema.Array(RunRow))
    const runs = <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>) => Effect.flatMap(statement, runRows)

    const insertRun = SqlSchema.void({ Request: NewRun, execute: (row) => sql`insert into agent_runs ${sql.insert({ ...row, status: "queued" })}` })
    const insert = Effect.fn("AgentRunsRepo.insert")(
      (row: typeof NewRun.Type) =>
        insertRun(row).pipe(conflictOnDuplicate("The agent is still on this conversation's last message: answer, wait for or cancel its run first"), withOrg(row.org_id)),
      failures
    )

    const find = Effect.fn("AgentRunsRepo.find")(
      (orgId: OrgId, id: string) =>
        runs(sql`select * from agent_runs where org_id = ${orgId} and id = ${id}`).pipe(
          Effect.map((rows) => (rows[0] === undefined ? null : stored(rows[0]))),
          withOrg(orgId)
        ),
      failures
    )

    /** Newest first, after the (created_at, id) of the last one seen. */
    const page = Effect.fn("AgentRunsRepo.page")(
      (orgId: OrgId, before: readonly [string, string] | null, limit: number) =>
        runs(
          before === null
            ? sql`select * from agent_runs where org_id = ${orgId} and eval_run_id is null order by created_at desc, id desc limit ${limit}`
            : sql`select * from agent_runs where org_id = ${orgId} and eval_run_id is null and (created_at, id) < (${before[0]}::timestamptz, ${before[1]})
                order by created_at desc, id desc limit ${limit}`
        ).pipe(Effect.map((rows) => rows.map(stored)), withOrg(orgId)),
      failures
    )

    /** Moves a run that has not ended to `status`; false when it had ended. */
    const setStatus = Effect.fn("AgentRunsRepo.setStatus")(
      (orgId: OrgId, id: string, status: RunStatus, extra: { pending?: PendingAsk | null; model?: string } = {}) =>
        sql`update agent_runs set status = ${status}, updated_at = date_trunc('milliseconds', now()),
            pending = ${extra.pending === undefined ? null : JSON.stringify(extra.pending)}::jsonb,
            model = coalesce(${extra.model ?? null}, model)
          where org_id = ${orgId} and id = ${id} and status not in ('completed', 'failed', 'cancelled') returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          withOrg(orgId)
        ),
      failures
    )

    /** Ends a run once: its outcome, unless it had ended already. */
    type Outcome = { status: "completed" | "failed" | "cancelled"; answer?: string; error?: { code: string; message: string } }
    const finished = (orgId: OrgId, id: string, outcome: Outcome) =>
      sql`update agent_runs set status = ${outcome.status}, answer = ${outcome.answer ?? null},
          error_code = ${outcome.error?.code ?? null}, error_message = ${outcome.error?.message ?? null}, pending = null,
          updated_at = date_trunc('milliseconds', now()), finished_at = date_trunc('milliseconds', now())
        where org_id = ${orgId} and id = ${id} and status not in ('completed', 'failed', 'cancelled')`

    const finish = Effect.fn("AgentRunsRepo.finish")((orgId: OrgId, id: string, outcome: Outcome) => finished(orgId, id, outcome).pipe(Effect.asVoid, withOrg(orgId)), failures)

    /**
     * The run's end: its last event (`data`) and its final row in one transaction, so no one who
     * follows its events sees the end before the row says so (an evaluation waiting on its agent did).
     */
    const end = Effect.fn("AgentRunsRepo.end")(
      (orgId: OrgId, id: string, outcome: Outcome, data: Record<string, unknown>) =>
        appendJobEvent(sql, { kind: AGENT_RUN_KIND, orgId, jobId: id, step: "end", type: outcome.status, data }).pipe(
          Effect.zipRight(finished(orgId, id, outcome)),
          Effect.asVoid,
          withOrg(orgId)
        ),
      failures
    )

    /** Marks the decision a waiting run waits for at `step` as taken; false when it was not waiting for it (any more). */
    const claimDecision = Effect.fn("AgentRunsRepo.claimDecision")(
      (orgId: OrgId, id: string, waitingAs: RunStatus, step: string) =>
        sql`update agent_runs set status = 'running', updated_at = date_trunc('milliseconds', now())
          where org_id = ${orgId} and id = ${id} and status = ${waitingAs} and pending->>'step' = ${step} returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          withOrg(orgId)
        ),
      failures
    )

    const requestCancel = Effect.fn("AgentRunsRepo.requestCancel")(
      (orgId: OrgId, id: string) =>
        sql`update agent_runs set cancel_requested = true, updated_at = date_trunc('milliseconds', now())
          where org_id = ${orgId} and id = ${id}`.pipe(Effect.asVoid, withOrg(orgId)),
      failures
    )

    /**
     * Appends the event of a workflow step, and adds the step's usage to the run's totals, once:
     * a step that runs again (after a crash) finds its event written and changes nothing.
     */
    const appendEvent = Effect.fn("AgentRunsRepo.appendEvent")(
      (orgId: OrgId, runId: string, step: string, type: string, data: Record<string, unknown>, usage: StepUsage = NO_USAGE) =>
        appendJobEvent(sql, { kind: AGENT_RUN_KIND, orgId, jobId: runId, step, type, data }).pipe(
          Effect.flatMap((written) =>
            written
              ? sql`update agent_runs set turns = turns + ${usage.turns}, input_tokens = input_tokens + ${usage.inputTokens},
                    output_tokens = output_tokens + ${usage.outputTokens}, cost_usd = cost_usd + ${usage.costUsd},
                    updated_at = date_trunc('milliseconds', now())
                  where org_id = ${orgId} and id = ${runId}`
              : Effect.void
          ),
          Effect.asVoid,
          withOrg(orgId)
        ),
      failures
    )

    /** System lookup across orgs: runs still queued between `graceSeconds` and `giveUpSeconds` after their row committed, oldest first (their job may never have started). */
    const unbegun = Effect.fn("AgentRunsRepo.unbegun")(unbegunJobs(sql, "agent_runs"), failures)

    /** System change across orgs: runs still queued `giveUpSeconds` after their row committed fail as not started. */
    const giveUpUnbegun = Effect.fn("AgentRunsRepo.giveUpUnbegun")(
      (giveUpSeconds: number) =>
        sql`update agent_runs set status = 'failed', error_code = 'not_started',
            error_message = 'The run did not start within an hour; start it again',
            updated_at = date_trunc('milliseconds', now()), finished_at = date_trunc('milliseconds', now())
          where status = 'queued' and created_at < now() - make_interval(secs => ${giveUpSeconds}) returning id`.pipe(Effect.map((rows) => rows.length)),
      failures
    )

    const stepEvent = SqlSchema.findOne({
      Request: Schema.Struct({ runId: Schema.String, step: Schema.String }),
      Result: Schema.Struct({ data: EventData }),
      execute: ({ runId, step }) => sql`select data from job_events where kind = ${AGENT_RUN_KIND} and job_id = ${runId} and step = ${step}`
    })
    /** The event a step wrote, if it did. */
    const eventOf = Effect.fn("AgentRunsRepo.eventOf")(
      (orgId: OrgId, runId: string, step: string) =>
        stepEvent({ runId, step }).pipe(
          Effect.map(Option.match({ onNone: () => null, onSome: (row) => row.data })),
          withOrg(orgId)
        ),
      failures
    )

    const toolCallCount = SqlSchema.single({
      Request: Schema.Struct({ runId: Schema.String, tool: Schema.String }),
      Result: Count,
      execute: ({ runId, tool }) => sql`select count(*)::int as n from job_events
        where kind = ${AGENT_RUN_KIND} and job_id = ${runId} and type = 'tool_call' and data->>'tool' = ${tool} and coalesce(data->>'is_error', 'false') <> 'true'`
    })
    /** How many calls of `tool` the run made that did not fail. */
    const toolCallsMade = Effect.fn("AgentRunsRepo.toolCallsMade")(
      (orgId: OrgId, runId: string, tool: string) => toolCallCount({ runId, tool }).pipe(Effect.map(({ n }) => n), withOrg(orgId)),
      failures
    )

    /** A conversation's runs, oldest first. */
    const ofConversation = Effect.fn("AgentRunsRepo.ofConversation")(
      (orgId: OrgId, conversationId: string) =>
        runs(sql`select * from agent_runs where org_id = ${orgId} and conversation_id = ${conversationId} order by created_at, id`).pipe(
          Effect.map((rows) => rows.map(stored)),
          withOrg(orgId)
        ),
      failures
    )

    const exchanges = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, conversationId: Schema.String, runId: Schema.String, limit: Schema.Number }),
      Result: Exchange,
      execute: ({ orgId, conversationId, runId, limit }) => sql`select prompt, answer from (
          select r.prompt, r.answer, r.created_at, r.id from agent_runs r, agent_runs this
          where this.org_id = ${orgId} and this.id = ${runId} and r.org_id = ${orgId} and r.conversation_id = ${conversationId}
            and r.status = 'completed' and r.answer is not null and (r.created_at, r.id) < (this.created_at, this.id)
          order by r.created_at desc, r.id desc limit ${limit}
        ) earlier order by created_at, id`
    })
    /** The last `limit` answered exchanges of a conversation before run `runId`, oldest first. */
    const exchangesBefore = Effect.fn("AgentRunsRepo.exchangesBefore")(
      (orgId: OrgId, conversationId: string, runId: string, limit: number) => exchanges({ orgId, conversationId, runId, limit }).pipe(withOrg(orgId)),
      failures
    )

    const spend = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, conversationId: Schema.NullOr(Schema.String), runId: Schema.String }),
      // numeric arrives as text; no tool call yet sums to null
      Result: Schema.Struct({ usd: Schema.NullOr(Schema.NumberFromString) }),
      execute: ({ orgId, conversationId, runId }) => sql`select sum((e.data->>'estimated_usd')::numeric) as usd
        from job_events e join agent_runs r on e.kind = ${AGENT_RUN_KIND} and r.id = e.job_id
        where r.org_id = ${orgId} and e.type = 'tool_call' and jsonb_typeof(e.data->'estimated_usd') = 'number'
          and ${conversationId === null ? sql`r.id = ${runId}` : sql`r.conversation_id = ${conversationId}`}`
    })
    /** The estimated cost of the queries run so far by a conversation's runs (or by one run outside a conversation). */
    const estimatedSpend = Effect.fn("AgentRunsRepo.estimatedSpend")(
      (orgId: OrgId, conversationId: string | null, runId: string) => spend({ orgId, conversationId, runId }).pipe(Effect.map(({ usd }) => usd ?? 0), withOrg(orgId)),
      failures
    )

    const eventsOfConversation = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, conversationId: Schema.String, limit: Schema.Number }),
      Result: RunEvent,
      execute: ({ orgId, conversationId, limit }) => sql`select e.job_id as run_id, e.seq, e.type, e.data, e.created_at
        from job_events e join agent_runs r on e.kind = ${AGENT_RUN_KIND} and r.id = e.job_id
        where r.org_id = ${orgId} and r.conversation_id = ${conversationId}
        order by r.created_at, r.id, e.seq limit ${limit}`
    })
    /** The events of a conversation's runs, run by run, in order. */
    const conversationEvents = Effect.fn("AgentRunsRepo.conversationEvents")(
      (orgId: OrgId, conversationId: string, limit: number) => eventsOfConversation({ orgId, conversationId, limit }).pipe(withOrg(orgId)),
      failures
    )

    return { insert, unbegun, giveUpUnbegun, find, page, ofConversation, conversationEvents, exchangesBefore, estimatedSpend, setStatus, finish, end, claimDecision, requestCancel, appendEvent, eventOf, toolCallsMade } as const
  })
}) {}
