import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { Connections } from "../services/Connections"
import { onConnection } from "./RequestState"

export const PiiHttp = HttpApiBuilder.group(SluiceApi, "pii", (handlers) =>
  Effect.gen(function* () {
    const connections = yield* Connections
    return handlers
      .handle("get", ({ path }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => connections.piiPolicy(p, path.name))))
      )
      .handle("put", ({ path, payload }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => connections.setPiiRules(p, path.name, payload.rules))))
      )
  })
)
