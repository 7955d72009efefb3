import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal, type Principal } from "../domain/Principal"
import { AgentRuns } from "../services/AgentRuns"
import { AnalysisTrails } from "../services/AnalysisTrails"
import { Chat } from "../services/Chat"
import { Gate } from "../gate/Gate"
import { runEventsResponse } from "./RunEventsResponse"

export const ChatHttp = HttpApiBuilder.group(SluiceApi, "chat", (handlers) =>
  Effect.gen(function* () {
    const chat = yield* Chat
    const runs = yield* AgentRuns
    const trails = yield* AnalysisTrails
    const gate = yield* Gate
    // A run of the conversation in the path, then what to do with it.
    const onRun = <A, E, R>(path: { readonly id: string; readonly run_id: string }, then: (principal: Principal) => Effect.Effect<A, E, R>) =>
      Effect.flatMap(CurrentPrincipal, (principal) => Effect.zipRight(chat.runOf(principal, path.id, path.run_id), then(principal)))
    return handlers
      .handle("start", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => chat.start(p, payload)))
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => chat.list(p, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => chat.get(p, path.id)))
      .handle("post", ({ path, payload }) => Effect.flatMap(CurrentPrincipal, (p) => chat.post(p, path.id, payload)))
      .handle("messages", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => chat.messages(p, path.id)))
      .handle("runEvents", ({ path, urlParams }) => onRun(path, (p) => runEventsResponse(runs, gate, p, path.run_id, urlParams)))
      .handle("cancel", ({ path }) => onRun(path, (p) => runs.patch(p, path.run_id, { action: "cancel" })))
      .handle("clarify", ({ path, payload }) => onRun(path, (p) => runs.patch(p, path.run_id, { action: "answer", answer: payload.answer })))
      .handle("approve", ({ path, payload }) => onRun(path, (p) => runs.patch(p, path.run_id, { action: payload.decision })))
      .handle("startThread", ({ payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          Effect.map(chat.start(p, payload), (conversation) => ({ ...conversation, runs: 0, model_calls: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 }))
        )
      )
      .handle("threads", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => chat.threads(p, urlParams)))
      .handle("threadEvents", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => chat.threadEvents(p, path.id)))
      .handle("resolveTrail", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => trails.resolve(p, urlParams.query_id)))
  })
)
