import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { AgentRuns } from "../services/AgentRuns"
import { Gate } from "../gate/Gate"
import { runEventsResponse } from "./RunEventsResponse"

export const AgentRunsHttp = HttpApiBuilder.group(SluiceApi, "agentRuns", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* AgentRuns
    const gate = yield* Gate
    return handlers
      .handle("start", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => runs.start(p, payload)))
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => runs.list(p, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => runs.get(p, path.id)))
      .handle("events", ({ path, urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => runEventsResponse(runs, gate, p, path.id, urlParams)))
      .handle("update", ({ path, payload }) => Effect.flatMap(CurrentPrincipal, (p) => runs.patch(p, path.id, payload)))
  })
)
