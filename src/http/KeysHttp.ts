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
      .handle("self", () =>
        Effect.map(CurrentPrincipal, (p) => ({ kind: p.kind, user_id: p.userId, key_id: p.keyId, key_prefix: p.keyPrefix, scopes: p.scopes, role: p.role }))
      )
      .handle("remove", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => keys.remove(p, path.key_id)))
  })
)
