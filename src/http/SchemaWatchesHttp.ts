import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { SchemaWatches } from "../services/SchemaWatches"

export const SchemaWatchesHttp = HttpApiBuilder.group(SluiceApi, "schemaWatches", (handlers) =>
  Effect.gen(function* () {
    const watches = yield* SchemaWatches
    return handlers
      .handle("list", () => Effect.flatMap(CurrentPrincipal, watches.list))
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => watches.create(p, payload)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => watches.get(p, path.id)))
      .handle("remove", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => watches.remove(p, path.id)))
      .handle("run", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => watches.run(p, path.id)))
  })
)
