import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { RateLimits } from "../../layers/RateLimits"
import { SluiceApi } from "../api/Api"
import { HEALTHY } from "../api/PublicApi"
import { NotFound } from "../domain/Errors"
import { LocalAccess } from "../services/LocalAccess"
import { RequestState } from "../gate/RequestState"

export const PublicHttp = HttpApiBuilder.group(SluiceApi, "public", (handlers) =>
  Effect.gen(function* () {
    const local = yield* LocalAccess
    const limits = yield* RateLimits
    return handlers
      .handle("health", () => Effect.succeed(HEALTHY))
      .handle("localApiKey", () =>
        Effect.gen(function* () {
          const state = yield* Effect.serviceOption(RequestState)
          const client = Option.map(state, (s) => s.client)
          yield* limits.perIp("auth", Option.match(client, { onNone: () => "unknown", onSome: (c) => c.ip ?? "unknown" }))
          if (Option.isNone(local.localKey) || !Option.exists(client, (c) => c.local)) {
            return yield* new NotFound({ message: "Not found" })
          }
          return { key: local.localKey.value }
        }).pipe(Effect.catchTag("Unavailable", () => new NotFound({ message: "Not found" })))
      )
  })
)
