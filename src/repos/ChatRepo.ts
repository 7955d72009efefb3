import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { Conversation } from "../domain/Chat"
import { ConversationId, OrgId, UserId } from "../domain/Ids"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const UNTITLED = "New conversation"
// A conversation without a title is named by its first message's first line.
const TITLE = `coalesce(c.title, (select left(split_part(r.prompt, E'\\n', 1), 80) from agent_runs r
  where r.conversation_id = c.id order by r.created_at, r.id limit 1), '${UNTITLED}')`
const COLUMNS = `c.id, ${TITLE} as title, c.connection_name, c.created_at, c.updated_at`

const ConversationRow = Schema.Struct({ ...Conversation.fields, id: ConversationId, created_at: Schema.DateFromSelf, updated_at: Schema.DateFromSelf })

// Counts and sums arrive as text (bigint, numeric).
const ThreadRow = Schema.Struct({
  ...ConversationRow.fields,
  runs: Schema.NumberFromString,
  model_calls: Schema.NumberFromString,
  tool_calls: Schema.NumberFromString,
  input_tokens: Schema.NumberFromString,
  output_tokens: Schema.NumberFromString,
  cost_usd: Schema.NumberFromString
})

const NewConversation = Schema.Struct({
  id: ConversationId,
  org_id: OrgId,
  user_id: UserId,
  title: Schema.NullOr(Schema.String),
  connection_name: Schema.NullOr(Schema.String)
})

const ById = Schema.Struct({ orgId: OrgId, id: ConversationId })
const PageRequest = Schema.Struct({ orgId: OrgId, before: Schema.NullOr(Schema.Tuple(Schema.String, Schema.String)), limit: Schema.Number })

/** Chat conversations, per org; their messages are their agent runs (AgentRunsRepo). */
export class ChatRepo extends Effect.Service<ChatRepo>()("sluice/ChatRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("chat")

    const insertConversation = SqlSchema.void({
      Request: NewConversation,
      execute: (row) => sql`insert into chat_conversations ${sql.insert(row)}`
    })
    const insert = Effect.fn("ChatRepo.insert")((row: typeof NewConversation.Type) => insertConversation(row).pipe(withOrg(row.org_id)), failures)

    const conversationById = SqlSchema.findOne({
      Request: ById,
      Result: ConversationRow,
      execute: ({ orgId, id }) => sql`select ${sql.unsafe(COLUMNS)} from chat_conversations c where c.org_id = ${orgId} and c.id = ${id}`
    })
    const find = Effect.fn("ChatRepo.find")(
      (orgId: OrgId, id: ConversationId) => conversationById({ orgId, id }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    // Most recently active first, after the (updated_at, id) of the last one seen.
    const pageWhere = ({ orgId, before, limit }: typeof PageRequest.Encoded) =>
      sql`c.org_id = ${orgId} ${before === null ? sql`` : sql`and (c.updated_at, c.id) < (${before[0]}::timestamptz, ${before[1]})`}
        order by c.updated_at desc, c.id desc limit ${limit}`

    const conversations = SqlSchema.findAll({
      Request: PageRequest,
      Result: ConversationRow,
      execute: (request) => sql`select ${sql.unsafe(COLUMNS)} from chat_conversations c where ${pageWhere(request)}`
    })
    const page = Effect.fn("ChatRepo.page")(
      (orgId: OrgId, before: readonly [string, string] | null, limit: number) => conversations({ orgId, before, limit }).pipe(withOrg(orgId)),
      failures
    )

    const touchConversation = SqlSchema.void({
      Request: ById,
      execute: ({ orgId, id }) => sql`update chat_conversations set updated_at = date_trunc('milliseconds', now()) where org_id = ${orgId} and id = ${id}`
    })
    const touch = Effect.fn("ChatRepo.touch")((orgId: OrgId, id: ConversationId) => touchConversation({ orgId, id }).pipe(withOrg(orgId)), failures)

    const threadsWithTotals = SqlSchema.findAll({
      Request: PageRequest,
      Result: ThreadRow,
      execute: (request) =>
        sql`select ${sql.unsafe(COLUMNS)}, totals.runs, totals.input_tokens, totals.output_tokens, totals.cost_usd, calls.model_calls, calls.tool_calls
          from chat_conversations c
          cross join lateral (select count(*) as runs, coalesce(sum(r.input_tokens), 0) as input_tokens, coalesce(sum(r.output_tokens), 0) as output_tokens,
              coalesce(sum(r.cost_usd), 0) as cost_usd from agent_runs r where r.conversation_id = c.id) totals
          cross join lateral (select count(*) filter (where e.type = 'model_call') as model_calls, count(*) filter (where e.type = 'tool_call') as tool_calls
              from job_events e join agent_runs r on e.kind = 'agent_run' and r.id = e.job_id where r.conversation_id = c.id) calls
          where ${pageWhere(request)}`
    })
    /** Conversations with their runs' totals, most recently active first. */
    const threads = Effect.fn("ChatRepo.threads")(
      (orgId: OrgId, before: readonly [string, string] | null, limit: number) => threadsWithTotals({ orgId, before, limit }).pipe(withOrg(orgId)),
      failures
    )

    return { insert, find, page, touch, threads } as const
  })
}) {}
