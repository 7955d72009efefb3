import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { Budgets } from "../services/Budgets"

export const BudgetsHttp = HttpApiBuilder.group(SluiceApi, "budgets", (handlers) =>
  Effect.gen(function* () {
    const budgets = yield* Budgets
    return handlers
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => budgets.create(p, payload)))
      .handle("list", () => Effect.flatMap(CurrentPrincipal, budgets.list))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => budgets.get(p, path.id)))
      .handle("remove", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => budgets.remove(p, path.id)))
  })
)
