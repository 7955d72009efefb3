import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { type AgentRun, AGENT_RUN_KIND, type PendingAsk, type RunStatus } from "../domain/AgentRun"
import type { KeyId, OrgId, UserId } from "../domain/Ids"
import type { JobEvent } from "../domain/JobEvent"
import type { Principal } from "../domain/Principal"
import { insertJobEvent } from "./JobEventsRepo"
import { tenantScope } from "./Tenant"

interface RunRow {
  readonly id: string
  readonly org_id: OrgId
  readonly user_id: UserId
  readonly principal_kind: Principal["kind"]
  readonly key_id: KeyId | null
  readonly prompt: string
  readonly connection_name: string | null
  readonly conversation_id: string | null
  readonly status: RunStatus
  readonly model: string | null
  readonly max_turns: number
  readonly turns: number
  readonly input_tokens: string
  readonly output_tokens: string
  readonly cost_usd: string
  readonly answer: string | null
  readonly error_code: string | null
  readonly error_message: string | null
  readonly pending: PendingAsk | null
  readonly cancel_requested: boolean
  readonly created_at: Date
  readonly updated_at: Date
  readonly finished_at: Date | null
}

/** A run as its owner sees it, and who it acts as. */
export interface StoredRun {
  readonly run: AgentRun
  readonly orgId: OrgId
  readonly userId: UserId
  readonly principalKind: Principal["kind"]
  readonly keyId: KeyId | null
  readonly cancelRequested: boolean
}

const stored = (row: RunRow): StoredRun => ({
  orgId: row.org_id,
  userId: row.user_id,
  principalKind: row.principal_kind,
  keyId: row.key_id,
  cancelRequested: row.cancel_requested,
  run: {
    id: row.id,
    status: row.status,
    prompt: row.prompt,
    connection_name: row.connection_name,
    conversation_id: row.conversation_id,
    model: row.model,
    max_turns: row.max_turns,
    turns: row.turns,
    input_tokens: Number(row.input_tokens),
    output_tokens: Number(row.output_tokens),
    cost_usd: Number(row.cost_usd),
    answer: row.answer,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? "" },
    pending: row.pending,
    withheld: [],
    created_at: row.created_at,
    updated_at: row.updated_at,
    finished_at: row.finished_at
  }
})

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

    const insert = (row: {
      id: string
      org_id: OrgId
      user_id: UserId
      principal_kind: Principal["kind"]
      key_id: KeyId | null
      prompt: string
      connection_name: string | null
      conversation_id: string | null
      max_turns: number
      model: string | null
    }) =>
      sql`insert into agent_runs ${sql.insert({ ...row, status: "queued" })}`.pipe(Effect.asVoid, withOrg(row.org_id))

    const find = (orgId: OrgId, id: string) =>
      sql<RunRow>`select * from agent_runs where org_id = ${orgId} and id = ${id}`.pipe(
        Effect.map((rows) => (rows[0] === undefined ? null : stored(rows[0]))),
        withOrg(orgId)
      )

    /** Newest first, after the (created_at, id) of the last one seen. */
    const page = (orgId: OrgId, before: readonly [string, string] | null, limit: number) =>
      (before === null
        ? sql<RunRow>`select * from agent_runs where org_id = ${orgId} order by created_at desc, id desc limit ${limit}`
        : sql<RunRow>`select * from agent_runs where org_id = ${orgId} and (created_at, id) < (${before[0]}::timestamptz, ${before[1]})
            order by created_at desc, id desc limit ${limit}`
      ).pipe(Effect.map((rows) => rows.map(stored)), withOrg(orgId))

    /** Moves a run that has not ended to `status`; false when it had ended. */
    const setStatus = (orgId: OrgId, id: string, status: RunStatus, extra: { pending?: PendingAsk | null; model?: string } = {}) =>
      sql<{ id: string }>`update agent_runs set status = ${status}, updated_at = date_trunc('milliseconds', now()),
          pending = ${extra.pending === undefined ? null : JSON.stringify(extra.pending)}::jsonb,
          model = coalesce(${extra.model ?? null}, model)
        where org_id = ${orgId} and id = ${id} and status not in ('completed', 'failed', 'cancelled') returning id`.pipe(
        Effect.map((rows) => rows.length > 0),
        withOrg(orgId)
      )

    /** Ends a run once: its outcome, unless it had ended already. */
    const finish = (orgId: OrgId, id: string, outcome: { status: "completed" | "failed" | "cancelled"; answer?: string; error?: { code: string; message: string } }) =>
      sql`update agent_runs set status = ${outcome.status}, answer = ${outcome.answer ?? null},
          error_code = ${outcome.error?.code ?? null}, error_message = ${outcome.error?.message ?? null}, pending = null,
          updated_at = date_trunc('milliseconds', now()), finished_at = date_trunc('milliseconds', now())
        where org_id = ${orgId} and id = ${id} and status not in ('completed', 'failed', 'cancelled')`.pipe(Effect.asVoid, withOrg(orgId))

    /** Marks the decision a waiting run waits for at `step` as taken; false when it was not waiting for it (any more). */
    const claimDecision = (orgId: OrgId, id: string, waitingAs: RunStatus, step: string) =>
      sql<{ id: string }>`update agent_runs set status = 'running', updated_at = date_trunc('milliseconds', now())
        where org_id = ${orgId} and id = ${id} and status = ${waitingAs} and pending->>'step' = ${step} returning id`.pipe(
        Effect.map((rows) => rows.length > 0),
        withOrg(orgId)
      )

    const requestCancel = (orgId: OrgId, id: string) =>
      sql`update agent_runs set cancel_requested = true, updated_at = date_trunc('milliseconds', now())
        where org_id = ${orgId} and id = ${id}`.pipe(Effect.asVoid, withOrg(orgId))

    /**
     * Appends the event of a workflow step, and adds the step's usage to the run's totals, once:
     * a step that runs again (after a crash) finds its event written and changes nothing.
     */
    const appendEvent = (orgId: OrgId, runId: string, step: string, type: string, data: Record<string, unknown>, usage: StepUsage = NO_USAGE) =>
      sql`with event as (${insertJobEvent(sql, { kind: AGENT_RUN_KIND, orgId, jobId: runId, step, type, data })})
        update agent_runs set turns = turns + ${usage.turns}, input_tokens = input_tokens + ${usage.inputTokens},
            output_tokens = output_tokens + ${usage.outputTokens}, cost_usd = cost_usd + ${usage.costUsd},
            updated_at = date_trunc('milliseconds', now())
          where org_id = ${orgId} and id = ${runId} and exists (select 1 from event)`.pipe(Effect.asVoid, withOrg(orgId))

    /** System lookup across orgs: runs still queued between `graceSeconds` and `giveUpSeconds` after their row committed, oldest first (their job may never have started). */
    const unbegun = (graceSeconds: number, giveUpSeconds: number, limit: number) =>
      sql<{ id: string; org_id: OrgId }>`select id, org_id from agent_runs
        where status = 'queued' and created_at < now() - make_interval(secs => ${graceSeconds})
          and created_at >= now() - make_interval(secs => ${giveUpSeconds})
        order by created_at limit ${limit}`

    /** System change across orgs: runs still queued `giveUpSeconds` after their row committed fail as not started. */
    const giveUpUnbegun = (giveUpSeconds: number) =>
      sql<{ id: string }>`update agent_runs set status = 'failed', error_code = 'not_started',
          error_message = 'The run did not start within an hour; start it again',
          updated_at = date_trunc('milliseconds', now()), finished_at = date_trunc('milliseconds', now())
        where status = 'queued' and created_at < now() - make_interval(secs => ${giveUpSeconds}) returning id`.pipe(Effect.map((rows) => rows.length))

    /** The event a step wrote, if it did. */
    const eventOf = (orgId: OrgId, runId: string, step: string) =>
      sql<{ data: Record<string, unknown> }>`select data from job_events where kind = ${AGENT_RUN_KIND} and job_id = ${runId} and step = ${step}`.pipe(
        Effect.map((rows) => rows[0]?.data ?? null),
        withOrg(orgId)
      )

    /** How many calls of `tool` the run made that did not fail. */
    const toolCallsMade = (orgId: OrgId, runId: string, tool: string) =>
      sql<{ n: number }>`select count(*)::int as n from job_events
        where kind = ${AGENT_RUN_KIND} and job_id = ${runId} and type = 'tool_call' and data->>'tool' = ${tool} and coalesce(data->>'is_error', 'false') <> 'true'`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0),
        withOrg(orgId)
      )

    /** A conversation's runs, oldest first. */
    const ofConversation = (orgId: OrgId, conversationId: string) =>
      sql<RunRow>`select * from agent_runs where org_id = ${orgId} and conversation_id = ${conversationId} order by created_at, id`.pipe(
        Effect.map((rows) => rows.map(stored)),
        withOrg(orgId)
      )

    /** The last `limit` answered exchanges of a conversation before run `runId`, oldest first. */
    const exchangesBefore = (orgId: OrgId, conversationId: string, runId: string, limit: number) =>
      sql<{ prompt: string; answer: string }>`select prompt, answer from (
          select r.prompt, r.answer, r.created_at, r.id from agent_runs r, agent_runs this
          where this.org_id = ${orgId} and this.id = ${runId} and r.org_id = ${orgId} and r.conversation_id = ${conversationId}
            and r.status = 'completed' and r.answer is not null and (r.created_at, r.id) < (this.created_at, this.id)
          order by r.created_at desc, r.id desc limit ${limit}
        ) earlier order by created_at, id`.pipe(withOrg(orgId))

    /** The estimated cost of the queries run so far by a conversation's runs (or by one run outside a conversation). */
    const estimatedSpend = (orgId: OrgId, conversationId: string | null, runId: string) =>
      sql<{ usd: string | null }>`select sum((e.data->>'estimated_usd')::numeric) as usd
        from job_events e join agent_runs r on e.kind = ${AGENT_RUN_KIND} and r.id = e.job_id
        where r.org_id = ${orgId} and e.type = 'tool_call' and jsonb_typeof(e.data->'estimated_usd') = 'number'
          and ${conversationId === null ? sql`r.id = ${runId}` : sql`r.conversation_id = ${conversationId}`}`.pipe(
        Effect.map((rows) => Number(rows[0]?.usd ?? 0)),
        withOrg(orgId)
      )

    /** The events of a conversation's runs, run by run, in order. */
    const conversationEvents = (orgId: OrgId, conversationId: string, limit: number) =>
      sql<JobEvent & { run_id: string }>`select e.job_id as run_id, e.seq, e.type, e.data, e.created_at
        from job_events e join agent_runs r on e.kind = ${AGENT_RUN_KIND} and r.id = e.job_id
        where r.org_id = ${orgId} and r.conversation_id = ${conversationId}
        order by r.created_at, r.id, e.seq limit ${limit}`.pipe(withOrg(orgId))

    return { insert, unbegun, giveUpUnbegun, find, page, ofConversation, conversationEvents, exchangesBefore, estimatedSpend, setStatus, finish, claimDecision, requestCancel, appendEvent, eventOf, toolCallsMade } as const
  })
}) {}
