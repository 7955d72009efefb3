import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { Reports } from "../services/Reports"

export const ReportsHttp = HttpApiBuilder.group(SluiceApi, "reports", (handlers) =>
  Effect.gen(function* () {
    const reports = yield* Reports
    return handlers
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => reports.list(p, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => reports.get(p, path.id)))
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => reports.create(p, payload)))
      .handle("update", ({ path, payload }) => Effect.flatMap(CurrentPrincipal, (p) => reports.update(p, path.id, payload)))
      .handle("remove", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => reports.remove(p, path.id)))
  })
)
