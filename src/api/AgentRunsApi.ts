import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AgentRun, PatchAgentRun, StartAgentRun } from "../domain/AgentRun"
import { JobEvent } from "../domain/JobEvent"
import { Conflict, InvalidRequest, NotFound } from "../domain/Errors"
import { Page, PageParams } from "../domain/Pagination"
import { ResourceId } from "../domain/Text"
import { DRIVES_AGENT, docs, RequiredScope, withAlternateContent } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: ResourceId })

export const EventParams = Schema.Struct({
  after: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000, { message: () => "limit must be between 1 and 1000" })))
})

export const withEventStream = withAlternateContent(
  "text/event-stream",
  { type: "string" },
  "The events: one JSON list, or with `Accept: text/event-stream` a server-sent event per run event as it is written (`id` is its `seq`; `Last-Event-ID` resumes), ending with the run's end; between them, to callers with the query scope, `text_delta` events without an id carry the model's text as it streams (`{turn, offset, text}`; offset 0 starts the turn's text again), not kept."
)

export class AgentRunsApi extends HttpApiGroup.make("agentRuns")
  .add(
    HttpApiEndpoint.post("start", "/agent-runs")
      .setPayload(StartAgentRun)
      .addSuccess(AgentRun, { status: 202 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, DRIVES_AGENT)
      .annotateContext(
        docs(
          "Start an agent run",
          "Starts the built-in agent on `prompt`: it answers with the MCP tools (schema search, governed queries…) acting as this key, with at most the read, query and write scopes (write only proposes knowledge), and every tool call audited under the run. The run is a durable job: poll it, or read its events. `connection_name` pins a connection; `max_turns` (1–200, default 50) bounds its model calls. Needs the `write` or the `agent:run` scope."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/agent-runs")
      .setUrlParams(PageParams)
      .addSuccess(Page(AgentRun))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List agent runs", "The organization's agent runs, newest first, with status, model, tokens and cost."))
  )
  .add(
    HttpApiEndpoint.get("get", "/agent-runs/:id")
      .setPath(ById)
      .addSuccess(AgentRun)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get an agent run", "One run: status, answer or error, what it waits for, turns, tokens and cost. 404 when the organization has no run with that id."))
  )
  .add(
    HttpApiEndpoint.get("events", "/agent-runs/:id/events")
      .setPath(ById)
      .setUrlParams(EventParams)
      .addSuccess(Schema.Struct({ items: Schema.Array(JobEvent) }))
      .addError(NotFound)
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotate(OpenApi.Transform, withEventStream)
      .annotateContext(
        docs(
          "List a run's events",
          "What the run did, in order: each model call (tokens, cost, timing) and tool call (SQL, rows, masked columns, result), questions, answers and its end. `after` is the last `seq` already seen. With `Accept: text/event-stream` they stream as server-sent events until the run ends."
        )
      )
  )
  .add(
    HttpApiEndpoint.patch("update", "/agent-runs/:id")
      .setPath(ById)
      .setPayload(PatchAgentRun)
      .addSuccess(AgentRun)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, DRIVES_AGENT)
      .annotateContext(
        docs(
          "Cancel, answer or approve an agent run",
          "`{\"action\":\"cancel\"}` stops the run at its next step (at once when it waits); `{\"action\":\"answer\",\"answer\":…}` answers the question it waits on; `{\"action\":\"approve\"}` or `{\"action\":\"decline\"}` decides on the query it waits to run (its estimate was over the per-query threshold or the conversation's budget; a declined query is not run and the model is told). 409 when the run has ended, or is not waiting for that."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "The built-in agent as a durable job: start it on a question, follow its steps, answer it, cancel it.") {}
