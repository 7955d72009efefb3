import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { Secrets } from "../services/Secrets"

export const SecretsHttp = HttpApiBuilder.group(SluiceApi, "secrets", (handlers) =>
  Effect.gen(function* () {
    const secrets = yield* Secrets
    return handlers
      .handle("listOrganization", () => Effect.flatMap(CurrentPrincipal, (p) => secrets.list(p, "organization")))
      .handle("putOrganization", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => secrets.put(p, "organization", payload)))
      .handle("llmKey", () => Effect.flatMap(CurrentPrincipal, secrets.llmKey))
      .handle("listUser", () => Effect.flatMap(CurrentPrincipal, (p) => secrets.list(p, "user")))
      .handle("putUser", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => secrets.put(p, "user", payload)))
  })
)
