import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { Knowledge } from "../services/Knowledge"

export const KnowledgeHttp = HttpApiBuilder.group(SluiceApi, "knowledge", (handlers) =>
  Effect.gen(function* () {
    const knowledge = yield* Knowledge
    return handlers
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => knowledge.list(p, urlParams)))
      .handle("retrievals", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => knowledge.retrievals(p, urlParams)))
      .handle("usage", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => knowledge.usage(p, urlParams.since_days)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => knowledge.get(p, path.id)))
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => knowledge.create(p, payload)))
      .handle("update", ({ path, payload }) => Effect.flatMap(CurrentPrincipal, (p) => knowledge.update(p, path.id, payload)))
      .handle("archive", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => Effect.map(knowledge.archive(p, path.id), (archived) => archived.entry)))
      .handle("approve", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => knowledge.approve(p, path.id)))
      .handle("edits", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => knowledge.edits(p, path.id)))
  })
)
