import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal, type Principal } from "../domain/Principal"
import { SchemaCuration } from "../services/SchemaCuration"
import { onConnection } from "../gate/RequestState"

export const SchemaCurationHttp = HttpApiBuilder.group(SluiceApi, "schemaCuration", (handlers) =>
  Effect.gen(function* () {
    const curation = yield* SchemaCuration
    const on = <A, E, R>(name: string, use: (principal: Principal) => Effect.Effect<A, E, R>) =>
      onConnection(name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, use)))
    return handlers
      .handle("enriched", ({ path }) => on(path.name, (p) => curation.enriched(p, path.name)))
      .handle("endorsements", ({ path }) => on(path.name, (p) => curation.endorsements(p, path.name)))
      .handle("putEndorsements", ({ path, payload }) => on(path.name, (p) => curation.putEndorsements(p, path.name, payload)))
      .handle("annotations", ({ path }) => on(path.name, (p) => curation.annotations(p, path.name)))
      .handle("generateAnnotations", ({ path }) => on(path.name, (p) => curation.generateAnnotations(p, path.name)))
      .handle("refine", ({ path, payload }) => on(path.name, (p) => curation.refine(p, path.name, payload)))
      .handle("correctColumns", ({ path, payload }) => on(path.name, (p) => curation.correctColumns(p, path.name, payload)))
      .handle("semanticModel", ({ path }) => on(path.name, (p) => curation.semanticModel(p, path.name)))
      .handle("putSemanticModel", ({ path, payload }) => on(path.name, (p) => curation.putSemanticModel(p, path.name, payload)))
      .handle("generateSemanticModel", ({ path }) => on(path.name, (p) => curation.generateSemanticModel(p, path.name)))
  })
)
