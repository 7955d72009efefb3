import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { EvalAccess } from "../services/EvalAccess"
import { EvalConfigs } from "../services/EvalConfigs"
import { EvalSets } from "../services/EvalSets"
import { EvalRuns } from "../services/EvalRuns"
import { EvalUploads } from "../services/EvalUploads"

export const EvalsHttp = HttpApiBuilder.group(SluiceApi, "evals", (handlers) =>
  Effect.gen(function* () {
    const access = yield* EvalAccess
    const configs = yield* EvalConfigs
    const sets = yield* EvalSets
    const uploads = yield* EvalUploads
    const runs = yield* EvalRuns
    return handlers
      .handle("availability", () => Effect.flatMap(CurrentPrincipal, access.availability))
      .handle("getConfig", () => Effect.flatMap(CurrentPrincipal, configs.get))
      .handle("putConfig", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => configs.update(p, payload)))
      .handle("tasks", () => Effect.flatMap(CurrentPrincipal, sets.tasks))
      .handle("initiateUpload", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => uploads.initiate(p, payload)))
      .handle("completeUpload", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => uploads.complete(p, payload.upload_id)))
      .handle("abortUpload", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => uploads.abort(p, payload.upload_id)))
      .handle("startRun", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => runs.start(p, payload)))
      .handle("listRuns", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => runs.list(p, urlParams)))
      .handle("getRun", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => runs.get(p, path.id)))
      .handle("runProgress", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => runs.progress(p, path.id)))
      .handle("regradeRun", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => runs.regrade(p, path.id)))
  })
)
