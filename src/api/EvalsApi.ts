import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AccuracyHistory } from "../domain/EvalAccuracy"
import { EvalAvailability, EvalConfig, EvalSetSource, UpdateEvalConfig } from "../domain/EvalConfig"
import { EvalSetManifest } from "../domain/EvalSet"
import { InitiateUpload, UploadById, UploadSession } from "../domain/EvalUpload"
import { ATTEMPT_NAME, EvalRun, EvalRunDetail, EvalRunProgress, StartEvalRun } from "../domain/EvalRun"
import { Page, PageParams } from "../domain/Pagination"
import { ResourceId } from "../domain/Text"
import { Conflict, Forbidden, InvalidRequest, NotFound, RateLimited, Unavailable } from "../domain/Errors"
import { EvalSandbox, EvalSandboxEvent, EvalSandboxName } from "../domain/EvalSandbox"
import { EVIDENCE_FILES } from "../domain/EvalRun"
import { JobEvent } from "../domain/JobEvent"
import { docs, RateClass, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: ResourceId })
const TaskId = Schema.String.pipe(Schema.pattern(ATTEMPT_NAME, { message: () => "a task id, or <task id>~<n> for its nth attempt" }))
const BySandbox = Schema.Struct({ name: EvalSandboxName })
const ByTask = Schema.Struct({ id: ResourceId, task: TaskId })
const Json = Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "application/json" }))
const EVIDENCE_SCOPE_NOTE = "Needs the query scope: evidence quotes what the agent read."

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
          "Replaces the fields given (null clears): `connection_name` (the pinned connection), `eval_set` (`{kind: repository, workspace_project_id, path, ref}` or `{kind: upload, upload_id}`), `runner_profile` (one the deployment offers; the eval set never chooses it), `notify_emails` (at most 20), `prompt_preamble` (at most 4000 characters), `max_tasks` (1–200), `attempts` (1–5: how many times a run attempts each task), `model`, `autorun` (knowledge added or approved starts a run within 2 minutes, acting as whoever turns it on)."
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
  .add(
    HttpApiEndpoint.post("startRun", "/evals/runs")
      .setPayload(StartEvalRun)
      .addSuccess(EvalRun, { status: 202 })
      .addError(InvalidRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Unavailable)
      .annotate(RequiredScope, "admin")
      .annotateContext(
        docs(
          "Start an evaluation run",
          "Runs the configured eval set's tasks (or `task_ids` of them, at most `max_tasks`), each `attempts` times (1–5; a task's nth attempt is the run's task `<id>~<n>`), with the built-in agent against the pinned connection (or `connection_name`), and grades them. The run records the eval set's ref (`<name>@<commit>`) and the warehouse's build fingerprint; a set that declares another fingerprint is refused. Refused, each with its own message: no runner profile, no evidence storage, no eval set, no or an unknown connection, a fingerprint mismatch, caps exceeded (max_tasks ≤ 200, attempts ≤ 5 and ≤ 600 in all, prompt_preamble ≤ 4000 characters, ≤ 20 notify_emails, ≤ 20 doc_ids, ≤ 200 task_ids). A third run in flight on one gateway process: 409 `Too many eval runs in flight`."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listRuns", "/evals/runs")
      .setUrlParams(PageParams)
      .addSuccess(Page(EvalRun))
      .addError(InvalidRequest)
      .addError(Forbidden)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List evaluation runs", "The organization's evaluation runs, newest first, with status, eval set ref, build fingerprint, verdict counts and accuracy."))
  )
  .add(
    HttpApiEndpoint.get("accuracy", "/evals/accuracy")
      .setUrlParams(PageParams)
      .addSuccess(AccuracyHistory)
      .addError(InvalidRequest)
      .addError(Forbidden)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Evaluation accuracy history",
          "A permanent record per completed run, newest first: accuracy, eval set ref, build fingerprint, trigger, the knowledge entries live during the run, model, preamble hash, connection, task cap, each task's outcome, how the run compared with the median of its five newest comparable runs (same ref and fingerprint: the drop, the tasks that flipped, McNemar's p, the tasks already flaky) and what changed since the newest of them; with the regressions detected (newest 100)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getRun", "/evals/runs/:id")
      .setPath(ById)
      .addSuccess(EvalRunDetail)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get an evaluation run", "One run with its tasks: each task's phase, verdict, checks (score, pass mark, detail) and agent run."))
  )
  .add(
    HttpApiEndpoint.get("runProgress", "/evals/runs/:id/progress")
      .setPath(ById)
      .addSuccess(EvalRunProgress)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("An evaluation run's progress", "Tasks done and in all, the tasks under way with their phase (provisioning, setup, agent, grading, capture, teardown), and seconds since the run began."))
  )
  .add(
    HttpApiEndpoint.get("runEvents", "/evals/runs/:id/events")
      .setPath(ById)
      .addSuccess(Schema.Struct({ items: Schema.Array(JobEvent) }))
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("An evaluation run's events", "What happened to its tasks beyond their phases, in order: `oom_killed` when a task's script went over SP_EVAL_MEMORY_LIMIT (its task, phase, script and the limit)."))
  )
  .add(
    HttpApiEndpoint.post("regradeRun", "/evals/runs/:id/regrade")
      .setPath(ById)
      .addSuccess(EvalRunDetail)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .addError(Unavailable)
      .annotate(RequiredScope, "admin")
      .annotateContext(
        docs(
          "Grade a finished run again",
          "Grades each task again from its stored evidence alone (the answer, the last result, the gold tables as captured), without running the agent or the warehouse: the same evidence gives the same verdicts. 409 while the run is under way."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("taskTranscript", "/evals/runs/:id/tasks/:task/transcript")
      .setPath(ByTask)
      .addSuccess(Json)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Unavailable)
      .annotate(RequiredScope, "query")
      .annotateContext(docs("A task's transcript", `The agent's run for the task, event by event (model turns, tool calls and their results), with secrets redacted. ${EVIDENCE_SCOPE_NOTE}`))
  )
  .add(
    HttpApiEndpoint.get("taskLog", "/evals/runs/:id/tasks/:task/setup/:phase/log")
      .setPath(Schema.Struct({ ...ByTask.fields, phase: Schema.Literal("setup", "teardown") }))
      .addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/plain" })))
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Unavailable)
      .annotate(RequiredScope, "query")
      .annotateContext(docs("A task's setup or teardown log", `What the task's setup or teardown script printed. 404 when the task ran none. ${EVIDENCE_SCOPE_NOTE}`))
  )
  .add(
    HttpApiEndpoint.get("runArtifacts", "/evals/runs/:id/artifacts")
      .setPath(ById)
      .addSuccess(Schema.Struct({ items: Schema.Array(Schema.Struct({ path: Schema.String, size: Schema.Number })) }))
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Unavailable)
      .annotate(RequiredScope, "query")
      .annotateContext(docs("A run's evidence files", `Every file the run stored, by path (\`tasks/task_<id>/evidence.json\`, \`…/transcript.json\`, \`run.json\`) and size. ${EVIDENCE_SCOPE_NOTE}`))
  )
  .add(
    HttpApiEndpoint.get("taskArtifact", "/evals/runs/:id/artifacts/:task/:file")
      .setPath(Schema.Struct({ ...ByTask.fields, file: Schema.Literal(...EVIDENCE_FILES) }))
      .addSuccess(Json)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Unavailable)
      .annotate(RequiredScope, "query")
      .annotateContext(docs("Download a task's evidence file", `One of evidence.json (what grading read), transcript.json, setup.log, teardown.log. ${EVIDENCE_SCOPE_NOTE}`))
  )
  .add(
    HttpApiEndpoint.get("exportRun", "/evals/runs/:id/export")
      .setPath(ById)
      .addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "application/zip" })))
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Unavailable)
      .annotate(RequiredScope, "query")
      .annotate(RateClass, "expensive")
      .annotateContext(
        docs(
          "Export a run's evidence",
          `A zip of the run's evidence (run.json as the run stands, each task's evidence and transcript), streamed as it is written. It stops before 256 MB; a TRUNCATED.txt entry then lists the files left out. ${EVIDENCE_SCOPE_NOTE}`
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listSandboxes", "/evals/sandboxes")
      .setUrlParams(Schema.Struct({ run_id: Schema.optional(ResourceId) }))
      .addSuccess(Schema.Struct({ items: Schema.Array(EvalSandbox) }))
      .addError(InvalidRequest)
      .addError(Forbidden)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Live evaluation sandboxes",
          "The sandboxes this gateway process runs for evaluation tasks' setup and teardown scripts (of one run with `run_id`), oldest first, and those that ended in the last 10 minutes (at most 8): each named `eval-<run>-<task>-<phase>`, with its status, memory limit, the characters its log holds and its latest event."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("sandboxEvents", "/evals/sandboxes/:name/events")
      .setPath(BySandbox)
      .addSuccess(Schema.Struct({ items: Schema.Array(EvalSandboxEvent) }))
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "An evaluation sandbox's events",
          "What happened to it, in order, as the gateway saw it: `scheduled`, `started`, `failed_to_start`, `log_cut` (its log passed 1,000,000 characters), `oom_killed` (it went over SP_EVAL_MEMORY_LIMIT), `exited`, `removed`."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("sandboxLogStream", "/evals/sandboxes/:name/logs/stream")
      .setPath(BySandbox)
      .setUrlParams(
        Schema.Struct({
          // Digits alone, as Last-Event-ID is read: a number parser would take 1e3 or 0x10 (attack 40 F5).
          offset: Schema.optional(Schema.compose(Schema.String.pipe(Schema.pattern(/^\d{1,15}$/, { message: () => "offset is a whole number of characters, in digits" })), Schema.NumberFromString))
        })
      )
      .addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })))
      .addError(InvalidRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(RateLimited)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "Follow an evaluation sandbox's log",
          "Server-sent events: what its script prints as it prints it (`log` events with `stream`, `text` and `offset`; each event's id is the offset after it, so `Last-Event-ID` or `offset` resumes), a `heartbeat` every 15 s while it prints nothing, and `end` once it has ended and its log is all sent. A stream sends at most 2 MB and stays at most 30 minutes (then a `limit` event says where to resume). At most 8 streams are open at once on a gateway process: the ninth gets 429 with `Retry-After: 15`."
        )
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(
    OpenApi.Description,
    "Evaluation runs grade the built-in agent against the organization's warehouse, task by task, from an eval set; for platform staff of allow-listed organizations."
  ) {}
