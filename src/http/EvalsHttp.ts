import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { EvalAccess } from "../services/EvalAccess"
import { EvalConfigs } from "../services/EvalConfigs"

export const EvalsHttp = HttpApiBuilder.group(SluiceApi, "evals", (handlers) =>
  Effect.gen(function* () {
    const access = yield* EvalAccess
    const configs = yield* EvalConfigs
    return handlers
      .handle("availability", () => Effect.flatMap(CurrentPrincipal, access.availability))
      .handle("getConfig", () => Effect.flatMap(CurrentPrincipal, configs.get))
      .handle("putConfig", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => configs.update(p, payload)))
  })
)
