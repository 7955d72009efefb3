import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { EvalAvailability, EvalConfig, EvalSetSource, UpdateEvalConfig } from "../domain/EvalConfig"
import { EvalSetManifest } from "../domain/EvalSet"
import { InitiateUpload, UploadById, UploadSession } from "../domain/EvalUpload"
import { Conflict, Forbidden, InvalidRequest, NotFound, Unavailable } from "../domain/Errors"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

export class EvalsApi extends HttpApiGroup.make("evals")
  .add(
    HttpApiEndpoint.get("availability", "/evals/availability")
      .addSuccess(EvalAvailability)
      .addError(Forbidden)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Whether evaluations are open",
          "For platform staff (a user id in SP_ADMIN_USER_IDS; self-hosted, the local operator): whether this organization may run evaluations (SP_EVAL_ALLOWED_ORGS; self-hosted, the local organization is), where evidence is stored, the runner profiles the deployment offers, and what stands in the way. Others get 403."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getConfig", "/evals/config")
      .addSuccess(EvalConfig)
      .addError(Forbidden)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Evaluation settings", "The organization's evaluation settings (defaults until saved). Staff of an allow-listed organization only."))
  )
  .add(
    HttpApiEndpoint.put("putConfig", "/evals/config")
      .setPayload(UpdateEvalConfig)
      .addSuccess(EvalConfig)
      .addError(InvalidRequest)
      .addError(Forbidden)
      .addError(Unavailable)
      .annotate(RequiredScope, "admin")
      .annotateContext(
        docs(
          "Change evaluation settings",
          "Replaces the fields given (null clears): `connection_name` (the pinned connection), `eval_set` (`{kind: repository, workspace_project_id, path, ref}` or `{kind: upload, upload_id}`), `runner_profile` (one the deployment offers; the eval set never chooses it), `notify_emails` (at most 20), `prompt_preamble` (at most 4000 characters), `max_tasks` (1–200), `model`, `autorun`."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("tasks", "/evals/tasks")
      .addSuccess(Schema.Struct({ ref: Schema.String, source: EvalSetSource, manifest: EvalSetManifest }))
      .addError(InvalidRequest)
      .addError(Forbidden)
      .addError(Unavailable)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "The eval set's tasks",
          "The configured eval set's manifest, parsed and checked, with its ref (`<name>@<commit>`). A set that cannot be used is refused with what is wrong: none configured, its repository or folder missing, links in it, no manifest, a manifest that does not decode, files it names that are missing, a gold CSV that is malformed."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("initiateUpload", "/evals/upload/initiate")
      .setPayload(InitiateUpload)
      .addSuccess(UploadSession)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Unavailable)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Begin or resume an eval-set upload",
          "`{file_name, size}` begins an upload of a zip archive of at most 8 GiB, sent in 64 MiB parts; `{upload_id}` picks an open one up again. The answer lists the parts already stored and, for each other part, where to PUT it: a presigned URL of the S3 store (send no key: the bytes go straight to the store) or this gateway's part route (send your key; the filesystem store). At most 3 open uploads per user (409); an upload expires 6 hours after it began. Not limited to platform staff."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("completeUpload", "/evals/upload/complete")
      .setPayload(UploadById)
      .addSuccess(UploadSession)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Unavailable)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Complete an eval-set upload", "Assembles the archive once every part is stored with its size (400 naming the parts missing or wrong). The archive is kept 7 days; name it in the settings' eval_set as `{kind: upload, upload_id}`."))
  )
  .add(
    HttpApiEndpoint.post("abortUpload", "/evals/upload/abort")
      .setPayload(UploadById)
      .addSuccess(UploadSession)
      .addError(NotFound)
      .addError(Unavailable)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Abort an eval-set upload", "Forgets an open upload and the parts stored for it, or deletes a completed archive of yours before its 7 days (a user keeps at most 10)."))
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(
    OpenApi.Description,
    "Evaluation runs grade the built-in agent against the organization's warehouse, task by task, from an eval set; for platform staff of allow-listed organizations."
  ) {}
