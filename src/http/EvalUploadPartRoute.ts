import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Stream } from "effect"
import { InvalidRequest } from "../domain/Errors"
import { Gate } from "../gate/Gate"
import { errorResponse, failureStatus } from "../gate/RequestPipeline"
import { RequestState } from "../gate/RequestState"
import { EvalUploads } from "../services/EvalUploads"

const UPLOAD_PART_PATH = /^\/api\/evals\/upload\/(upl_[0-9a-f]{32})\/parts\/(\d{1,5})$/

/**
 * `PUT /api/evals/upload/{upload_id}/parts/{n}` (write): one 64 MiB part of an eval-set upload into
 * the filesystem store, its body (application/octet-stream, with a Content-Length) streamed to disk
 * as it arrives, never held whole. The S3 store's parts go to presigned URLs instead.
 */
export const EvalUploadPartRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const gate = yield* Gate
    const uploads = yield* EvalUploads

    const handle = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const state = yield* Effect.serviceOption(RequestState)
      if (Option.isNone(state)) return errorResponse(500, "internal_error", "Internal error")
      const info = state.value
      info.eventType = "eval_upload_part"
      const match = UPLOAD_PART_PATH.exec(request.url)
      if (match === null || request.method !== "PUT") return errorResponse(404, "not_found", "A part goes to PUT /api/evals/upload/{upload_id}/parts/{part_number}")
      const [, uploadId = "", part = ""] = match
      info.details = { upload_id: uploadId, part_number: Number(part) }
      const length = Number(request.headers["content-length"])
      const result = yield* Effect.either(
        Effect.gen(function* () {
          const principal = yield* gate.admit(info, request.headers, "general")
          yield* gate.authorize(principal, "write", "Uploading an eval set", true)
          if (!Number.isSafeInteger(length) || length < 1) return yield* new InvalidRequest({ message: "A part is sent with its Content-Length" })
          return yield* uploads.putPart(principal, uploadId, Number(part), length, request.stream.pipe(Stream.mapError(() => new InvalidRequest({ message: "The part's body stopped before its end" }))))
        })
      )
      if (result._tag === "Left") return errorResponse(failureStatus(result.left._tag), result.left.code, result.left.message)
      return HttpServerResponse.unsafeJson(result.right, { headers: { etag: `"${result.right.etag}"` } })
    })

    yield* router.put("/api/evals/upload/:upload_id/parts/:part", handle)
  })
)
