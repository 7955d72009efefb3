import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { RequestState } from "../gate/RequestState"
import type { ChildReport } from "../services/CodeQueries"
import { Sandboxes } from "../services/Sandboxes"

/** The request's audit draft named `eventType` for the sandbox `sandboxId`: what its row says. */
const audited = (eventType: string, sandboxId?: string) =>
  Effect.map(Effect.serviceOption(RequestState), (state) => {
    const info = Option.getOrUndefined(state)
    if (info !== undefined) {
      info.eventType = eventType
      if (sandboxId !== undefined) info.details = { sandbox_id: sandboxId }
    }
    return info
  })

export const SandboxesHttp = HttpApiBuilder.group(SluiceApi, "sandboxes", (handlers) =>
  Effect.gen(function* () {
    const sandboxes = yield* Sandboxes
    return handlers
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => sandboxes.list(p, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => sandboxes.get(p, path.id)))
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const info = yield* audited("sandbox_create")
          const created = yield* sandboxes.create(yield* CurrentPrincipal, payload)
          if (info !== undefined) info.details = { sandbox_id: created.id }
          return created
        })
      )
      .handle("execute", ({ path, payload }) =>
        Effect.gen(function* () {
          const info = yield* audited("sandbox_execute", path.id)
          // Each governed query the code runs is a child row of this request's.
          const report: ChildReport = (facts, sql, connection) =>
            Effect.sync(() => info?.childQueries.set(facts.query_id, { facts, sql, connection, parent: { event_type: "sandbox_execute", sandbox_id: path.id, request_id: info.requestId } }))
          const result = yield* sandboxes.execute(yield* CurrentPrincipal, path.id, payload, report)
          if (info !== undefined) info.details = { sandbox_id: path.id, success: result.success, execution_ms: result.execution_ms, truncated: result.truncated }
          return result
        })
      )
      .handle("remove", ({ path }) => Effect.zipRight(audited("sandbox_delete", path.id), Effect.flatMap(CurrentPrincipal, (p) => sandboxes.remove(p, path.id))))
  })
)
