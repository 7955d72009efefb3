import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, type Stream } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { EvalAccess } from "../services/EvalAccess"
import { EvalAccuracy } from "../services/EvalAccuracy"
import { EvalConfigs } from "../services/EvalConfigs"
import { EvalSets } from "../services/EvalSets"
import { EvalEvidence } from "../services/EvalEvidence"
import { EvalRuns } from "../services/EvalRuns"
import { EvalUploads } from "../services/EvalUploads"
import { EvalSandboxes } from "../services/EvalSandboxes"
import { Gate } from "../gate/Gate"
import { eventStream } from "./EventStream"
import { lastEventId } from "./RunEventsResponse"

/** A stored object as a response: streamed from the store with its length; named for a download when `filename` is given. */
const objectResponse = (object: { readonly size: number; readonly body: Stream.Stream<Uint8Array, unknown> }, contentType: string, filename?: string) =>
  HttpServerResponse.stream(object.body, {
    contentType,
    contentLength: object.size,
    headers: filename === undefined ? {} : { "content-disposition": `attachment; filename="${filename.replace(/[^A-Za-z0-9_.-]/g, "_")}"` }
  })

export const EvalsHttp = HttpApiBuilder.group(SluiceApi, "evals", (handlers) =>
  Effect.gen(function* () {
    const access = yield* EvalAccess
    const configs = yield* EvalConfigs
    const sets = yield* EvalSets
    const uploads = yield* EvalUploads
    const runs = yield* EvalRuns
    const accuracy = yield* EvalAccuracy
    const evidence = yield* EvalEvidence
    const liveSandboxes = yield* EvalSandboxes
    const gate = yield* Gate
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
      .handle("accuracy", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => accuracy.history(p, urlParams)))
      .handle("getRun", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => runs.get(p, path.id)))
      .handle("runProgress", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => runs.progress(p, path.id)))
      .handle("runEvents", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => runs.events(p, path.id)))
      .handle("regradeRun", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => runs.regrade(p, path.id)))
      .handleRaw("taskTranscript", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => Effect.map(evidence.file(p, path.id, path.task, "transcript.json"), (f) => objectResponse(f, "application/json"))))
      .handleRaw("taskLog", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => Effect.map(evidence.file(p, path.id, path.task, `${path.phase}.log`), (f) => objectResponse(f, "text/plain; charset=utf-8"))))
      .handle("runArtifacts", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => evidence.artifacts(p, path.id)))
      .handleRaw("taskArtifact", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          Effect.map(evidence.file(p, path.id, path.task, path.file), (f) =>
            objectResponse(f, path.file.endsWith(".json") ? "application/json" : "text/plain; charset=utf-8", `${path.task}-${path.file}`)
          )
        )
      )
      .handle("listSandboxes", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => liveSandboxes.list(p, urlParams.run_id)))
      .handle("sandboxEvents", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => liveSandboxes.events(p, path.name)))
      .handleRaw("sandboxLogStream", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const offset = lastEventId(request.headers["last-event-id"]) ?? urlParams.offset ?? 0
          return yield* eventStream(gate, yield* liveSandboxes.logStream(yield* CurrentPrincipal, path.name, offset))
        })
      )
      .handleRaw("exportRun", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          Effect.map(evidence.exportRun(p, path.id), (zip) =>
            HttpServerResponse.stream(zip, { contentType: "application/zip", headers: { "content-disposition": `attachment; filename="${path.id}.zip"` } })
          )
        )
      )
  })
)
