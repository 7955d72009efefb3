import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { onConnection } from "../gate/RequestState"
import { DbtRunTokens } from "../services/DbtRunTokens"
import { hostReached } from "./OriginReached"

export const DbtProxyHttp = HttpApiBuilder.group(SluiceApi, "dbtProxy", (handlers) =>
  Effect.gen(function* () {
    const tokens = yield* DbtRunTokens
    return handlers.handle("mintRunToken", ({ payload }) =>
      Effect.gen(function* () {
        yield* onConnection(payload.connection_name)
        const principal = yield* CurrentPrincipal
        return yield* tokens.mint(principal, payload, hostReached(yield* HttpServerRequest.HttpServerRequest))
      })
    )
  })
)
