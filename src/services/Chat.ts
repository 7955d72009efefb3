import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import type { AgentRun } from "../domain/AgentRun"
import type { Message, PostMessage, StartConversation } from "../domain/Chat"
import { NotFound } from "../domain/Errors"
import { ConversationId } from "../domain/Ids"
import { decodeCursor, pageOf, TimeAndIdCursor } from "../domain/Pagination"
import type { Principal } from "../domain/Principal"
import { ChatRepo } from "../repos/ChatRepo"
import { AgentRuns } from "./AgentRuns"
import { Connections } from "./Connections"

const MAX_TRACE_EVENTS = 5_000

/** A run as the two messages it stands for: the user's prompt, and the agent's answer or state. */
const messagesOf = (run: AgentRun): ReadonlyArray<Message> => [
  { id: `${run.id}.prompt`, role: "user", content: run.prompt, run_id: run.id, status: null, pending: null, error: null, created_at: run.created_at },
  { id: `${run.id}.answer`, role: "assistant", content: run.answer, run_id: run.id, status: run.status, pending: run.pending, error: run.error, created_at: run.finished_at ?? run.updated_at }
]

const position = (c: { readonly updated_at: Date; readonly id: string }) => [c.updated_at.toISOString(), c.id]

/** Chat: conversations whose messages start agent runs, which carry the conversation so far. */
export class Chat extends Effect.Service<Chat>()("sluice/Chat", {
  effect: Effect.gen(function* () {
    const repo = yield* ChatRepo
    const runs = yield* AgentRuns
    const connections = yield* Connections

    const find = (principal: Principal, id: string) =>
      repo.find(principal.orgId, ConversationId.make(id)).pipe(
        Effect.flatMap((found) => (found === null ? Effect.fail(new NotFound({ message: `There is no conversation ${id}` })) : Effect.succeed(found)))
      )

    const start = Effect.fn("Chat.start")(function* (principal: Principal, input: StartConversation) {
      if (input.connection_name !== undefined) yield* connections.get(principal, input.connection_name)
      const id = ConversationId.make(`conv_${randomUUID().replaceAll("-", "")}`)
      yield* repo.insert({ id, org_id: principal.orgId, user_id: principal.userId, title: input.title ?? null, connection_name: input.connection_name ?? null })
      return yield* find(principal, id)
    })

    const pageParams = (params: { limit?: number | undefined; cursor?: string | undefined }) =>
      Effect.map(params.cursor === undefined ? Effect.succeed(null) : decodeCursor(params.cursor, TimeAndIdCursor), (before) => ({ limit: params.limit ?? 50, before }))

    const list = Effect.fn("Chat.list")(function* (principal: Principal, params: { limit?: number | undefined; cursor?: string | undefined }) {
      const { limit, before } = yield* pageParams(params)
      return pageOf(yield* repo.page(principal.orgId, before, limit + 1), limit, position)
    })

    const get = Effect.fn("Chat.get")(function* (principal: Principal, id: string) {
      return yield* find(principal, id)
    })

    /** Starts the run that answers `content`; the store holds one active run per conversation (409 while one is). */
    const post = Effect.fn("Chat.post")(function* (principal: Principal, id: string, input: PostMessage) {
      const conversation = yield* find(principal, id)
      const run = yield* runs.start(
        principal,
        { prompt: input.content, ...(conversation.connection_name !== null ? { connection_name: conversation.connection_name } : {}) },
        id
      )
      yield* repo.touch(principal.orgId, conversation.id)
      return { message: messagesOf(run)[0]!, run }
    })

    const messages = Effect.fn("Chat.messages")(function* (principal: Principal, id: string) {
      yield* find(principal, id)
      return { items: (yield* runs.ofConversation(principal, id)).flatMap(messagesOf) }
    })

    /** A run of this conversation (404 for another conversation's). */
    const runOf = Effect.fn("Chat.runOf")(function* (principal: Principal, id: string, runId: string) {
      yield* find(principal, id)
      const run = yield* runs.get(principal, runId)
      if (run.conversation_id !== id) return yield* new NotFound({ message: `Conversation ${id} has no run ${runId}` })
      return run
    })

    const threads = Effect.fn("Chat.threads")(function* (principal: Principal, params: { limit?: number | undefined; cursor?: string | undefined }) {
      const { limit, before } = yield* pageParams(params)
      return pageOf(yield* repo.threads(principal.orgId, before, limit + 1), limit, position)
    })

    const threadEvents = Effect.fn("Chat.threadEvents")(function* (principal: Principal, id: string) {
      yield* find(principal, id)
      const items = yield* runs.conversationEvents(principal, id, MAX_TRACE_EVENTS + 1)
      return { items: items.slice(0, MAX_TRACE_EVENTS), truncated: items.length > MAX_TRACE_EVENTS }
    })

    return { start, list, get, post, messages, runOf, threads, threadEvents } as const
  }),
  dependencies: [ChatRepo.Default, AgentRuns.Default, Connections.Default]
}) {}

