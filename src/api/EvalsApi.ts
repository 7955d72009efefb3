import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { EvalAvailability, EvalConfig, EvalSetSource, UpdateEvalConfig } from "../domain/EvalConfig"
import { EvalSetManifest } from "../domain/EvalSet"
import { Forbidden, InvalidRequest, Unavailable } from "../domain/Errors"
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
  .middleware(Authentication)
  .prefix("/api")
  .annotate(
    OpenApi.Description,
    "Evaluation runs grade the built-in agent against the organization's warehouse, task by task, from an eval set; for platform staff of allow-listed organizations."
  ) {}
