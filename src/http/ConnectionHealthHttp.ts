import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { ConnectionHealth } from "../services/ConnectionHealth"
import { onConnection } from "../gate/RequestState"

export const ConnectionHealthHttp = HttpApiBuilder.group(SluiceApi, "connectionHealth", (handlers) =>
  Effect.gen(function* () {
    const health = yield* ConnectionHealth
    return handlers
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => health.list(p, urlParams.window_minutes)))
      .handle("stats", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => health.stats(p, urlParams.window_minutes)))
      .handle("get", ({ path, urlParams }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => health.of(p, path.name, urlParams.window_minutes))))
      )
      .handle("history", ({ path, urlParams }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => health.history(p, path.name, urlParams))))
      )
  })
)
