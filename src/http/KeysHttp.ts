import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { ApiKeys } from "../services/ApiKeys"

export const KeysHttp = HttpApiBuilder.group(SluiceApi, "keys", (handlers) =>
  Effect.gen(function* () {
    const keys = yield* ApiKeys
    return handlers
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => keys.create(p, payload)))
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => keys.list(p, urlParams)))
      .handle("remove", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => keys.remove(p, path.key_id)))
  })
)
