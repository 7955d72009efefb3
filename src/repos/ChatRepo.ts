import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Conversation, TraceThread } from "../domain/Chat"
import type { OrgId, UserId } from "../domain/Ids"
import { tenantScope } from "./Tenant"

const UNTITLED = "New conversation"
// A conversation without a title is named by its first message's first line.
const TITLE = `coalesce(c.title, (select left(split_part(r.prompt, E'\\n', 1), 80) from agent_runs r
  where r.conversation_id = c.id order by r.created_at, r.id limit 1), '${UNTITLED}')`
const COLUMNS = `c.id, ${TITLE} as title, c.connection_name, c.created_at, c.updated_at`

interface ThreadRow extends Omit<TraceThread, "runs" | "model_calls" | "tool_calls" | "input_tokens" | "output_tokens" | "cost_usd"> {
  readonly runs: string
  readonly model_calls: string
  readonly tool_calls: string
  readonly input_tokens: string
  readonly output_tokens: string
  readonly cost_usd: string
}

/** Chat conversations, per org; their messages are their agent runs (AgentRunsRepo). */
export class ChatRepo extends Effect.Service<ChatRepo>()("sluice/ChatRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)

    const insert = (row: { id: string; org_id: OrgId; user_id: UserId; title: string | null; connection_name: string | null }) =>
      sql`insert into chat_conversations ${sql.insert(row)}`.pipe(Effect.asVoid, withOrg(row.org_id))

    const find = (orgId: OrgId, id: string) =>
      sql<Conversation>`select ${sql.unsafe(COLUMNS)} from chat_conversations c where c.org_id = ${orgId} and c.id = ${id}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    // Most recently active first, after the (updated_at, id) of the last one seen.
    const pageWhere = (orgId: OrgId, before: readonly [string, string] | null, limit: number) =>
      sql`c.org_id = ${orgId} ${before === null ? sql`` : sql`and (c.updated_at, c.id) < (${before[0]}::timestamptz, ${before[1]})`}
        order by c.updated_at desc, c.id desc limit ${limit}`

    const page = (orgId: OrgId, before: readonly [string, string] | null, limit: number) =>
      sql<Conversation>`select ${sql.unsafe(COLUMNS)} from chat_conversations c where ${pageWhere(orgId, before, limit)}`.pipe(withOrg(orgId))

    const touch = (orgId: OrgId, id: string) =>
      sql`update chat_conversations set updated_at = date_trunc('milliseconds', now()) where org_id = ${orgId} and id = ${id}`.pipe(Effect.asVoid, withOrg(orgId))

    /** Conversations with their runs' totals, most recently active first. */
    const threads = (orgId: OrgId, before: readonly [string, string] | null, limit: number) =>
      sql<ThreadRow>`select ${sql.unsafe(COLUMNS)}, totals.runs, totals.input_tokens, totals.output_tokens, totals.cost_usd, calls.model_calls, calls.tool_calls
        from chat_conversations c
        cross join lateral (select count(*) as runs, coalesce(sum(r.input_tokens), 0) as input_tokens, coalesce(sum(r.output_tokens), 0) as output_tokens,
            coalesce(sum(r.cost_usd), 0) as cost_usd from agent_runs r where r.conversation_id = c.id) totals
        cross join lateral (select count(*) filter (where e.type = 'model_call') as model_calls, count(*) filter (where e.type = 'tool_call') as tool_calls
            from job_events e join agent_runs r on e.kind = 'agent_run' and r.id = e.job_id where r.conversation_id = c.id) calls
        where ${pageWhere(orgId, before, limit)}`.pipe(
        Effect.map((rows) =>
          rows.map(
            (row): TraceThread => ({
              ...row,
              runs: Number(row.runs),
              model_calls: Number(row.model_calls),
              tool_calls: Number(row.tool_calls),
              input_tokens: Number(row.input_tokens),
              output_tokens: Number(row.output_tokens),
              cost_usd: Number(row.cost_usd)
            })
          )
        ),
        withOrg(orgId)
      )

    return { insert, find, page, touch, threads } as const
  })
}) {}
