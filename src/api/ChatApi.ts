import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AgentRun, ClarificationAnswer } from "../domain/AgentRun"
import { JobEvent } from "../domain/JobEvent"
import { AnalysisTrail, Conversation, Message, PostedMessage, PostMessage, StartConversation, TraceEvent, TraceThread } from "../domain/Chat"
import { Conflict, InvalidRequest, NotFound } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { ResourceId } from "../domain/Text"
import { EventParams, withEventStream } from "./AgentRunsApi"
import { DRIVES_AGENT, docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: ResourceId })
const ByRun = Schema.Struct({ id: ResourceId, run_id: ResourceId })
const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const Clarification = Schema.Struct({ answer: ClarificationAnswer }).annotations(strict)
export const Approval = Schema.Struct({ decision: Schema.Literal("approve", "decline") }).annotations(strict)
const TrailParams = Schema.Struct({ query_id: ResourceId })

export class ChatApi extends HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.post("start", "/chat/conversations")
      .setPayload(StartConversation)
      .addSuccess(Conversation, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Start a conversation",
          "A conversation with the built-in data agent. `connection_name` pins the connection its runs use; `title` defaults to the first message's first line."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/chat/conversations")
      .setUrlParams(PageParams)
      .addSuccess(Page(Conversation))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List conversations", "The organization's conversations, most recently active first."))
  )
  .add(
    HttpApiEndpoint.get("get", "/chat/conversations/:id")
      .setPath(ById)
      .addSuccess(Conversation)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a conversation", "One conversation. 404 when the organization has none with that id."))
  )
  .add(
    HttpApiEndpoint.post("post", "/chat/conversations/:id/messages")
      .setPath(ById)
      .setPayload(PostMessage)
      .addSuccess(PostedMessage, { status: 202 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, DRIVES_AGENT)
      .annotateContext(
        docs(
          "Send a message",
          "Posts the user's message (`content`) and starts the agent run that answers it, with the conversation's earlier exchanges as its context. The run acts as the caller, with at most the read, query and write scopes (write only proposes knowledge). Follow it at `…/runs/{run_id}/events`. 409 while the conversation's last run has not ended."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("messages", "/chat/conversations/:id/messages")
      .setPath(ById)
      .addSuccess(Schema.Struct({ items: Schema.Array(Message) }))
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "List a conversation's messages",
          "The user's messages and the agent's, oldest first: each agent message carries its run's status, what it waits for (a question, a query to approve) and its error. The agent's words need the query scope (they can quote rows)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("runEvents", "/chat/conversations/:id/runs/:run_id/events")
      .setPath(ByRun)
      .setUrlParams(EventParams)
      .addSuccess(Schema.Struct({ items: Schema.Array(JobEvent) }))
      .addError(NotFound)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotate(OpenApi.Transform, withEventStream)
      .annotateContext(docs("Follow a run", "The run's events as JSON, or with `Accept: text/event-stream` as server-sent events until it ends (`Last-Event-ID` resumes), with the model's text as it streams in `text_delta` events."))
  )
  .add(
    HttpApiEndpoint.post("cancel", "/chat/conversations/:id/runs/:run_id/cancel")
      .setPath(ByRun)
      .addSuccess(AgentRun)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, DRIVES_AGENT)
      .annotateContext(docs("Cancel a run", "Stops the run at its next step, at once when it waits. 409 when it has ended."))
  )
  .add(
    HttpApiEndpoint.post("clarify", "/chat/conversations/:id/runs/:run_id/clarification")
      .setPath(ByRun)
      .setPayload(Clarification)
      .addSuccess(AgentRun)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, DRIVES_AGENT)
      .annotateContext(docs("Answer the agent's question", "Answers the question the run waits on (`waiting_for_user`). 409 when it is not waiting for one."))
  )
  .add(
    HttpApiEndpoint.post("approve", "/chat/conversations/:id/runs/:run_id/approval")
      .setPath(ByRun)
      .setPayload(Approval)
      .addSuccess(AgentRun)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, DRIVES_AGENT)
      .annotateContext(
        docs(
          "Approve or decline a query",
          "Decides on the query the run waits to run (`waiting_for_query_approval`: its estimate is over the per-query threshold or would pass the conversation's budget). A declined query is not run; the agent is told and goes on without it. 409 when the run is not waiting for an approval."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("startThread", "/chat/traces/threads")
      .setPayload(StartConversation)
      .addSuccess(TraceThread, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Open a trace thread", "A trace thread is a conversation seen as its runs' model and tool calls: this starts one, as POST /api/chat/conversations does."))
  )
  .add(
    HttpApiEndpoint.get("threads", "/chat/traces/threads")
      .setUrlParams(PageParams)
      .addSuccess(Page(TraceThread))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List trace threads", "Conversations with their runs' totals: runs, model calls, tool calls, tokens and cost; most recently active first."))
  )
  .add(
    HttpApiEndpoint.get("threadEvents", "/chat/traces/threads/:id/events")
      .setPath(ById)
      .addSuccess(Schema.Struct({ items: Schema.Array(TraceEvent), truncated: Schema.Boolean }))
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "List a trace thread's events",
          "Every model call (tokens, cost, timing) and tool call (SQL, rows, masked columns, timing) of the conversation's runs, run by run, in order; at most 5000 (`truncated` says when there were more)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("resolveTrail", "/analysis-trails/resolve")
      .setUrlParams(TrailParams)
      .addSuccess(AnalysisTrail)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Resolve an analysis trail",
          "From a query id (in every result, tool output and run event) to what produced it: the statement (literals redacted unless the caller may query) and connection, when and how it ran, and the agent run, step, conversation and message that asked for it."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Chat with the built-in data agent: conversations whose messages start agent runs, their traces, and analysis trails from a result back to the question.") {}
