import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { RequestState } from "../gate/RequestState"
import { Sandboxes } from "../services/Sandboxes"

/** The request's audit draft, for the sandbox's record and its queries' rows. */
const draft = Effect.map(Effect.serviceOption(RequestState), Option.getOrUndefined)

export const SandboxesHttp = HttpApiBuilder.group(SluiceApi, "sandboxes", (handlers) =>
  Effect.gen(function* () {
    const sandboxes = yield* Sandboxes
    return handlers
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => sandboxes.list(p, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => sandboxes.get(p, path.id)))
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const info = yield* draft
          if (info !== undefined) info.eventType = "sandbox_create"
          return yield* sandboxes.create(yield* CurrentPrincipal, payload, info)
        })
      )
      .handle("execute", ({ path, payload }) =>
        Effect.gen(function* () {
          const info = yield* draft
          if (info !== undefined) info.eventType = "sandbox_execute"
          return yield* sandboxes.execute(yield* CurrentPrincipal, path.id, payload, info)
        })
      )
      .handle("remove", ({ path }) =>
        Effect.gen(function* () {
          const info = yield* draft
          if (info !== undefined) {
            info.eventType = "sandbox_delete"
            info.details = { sandbox_id: path.id }
          }
          return yield* sandboxes.remove(yield* CurrentPrincipal, path.id)
        })
      )
  })
)
