import { Readable } from "node:stream"
import type { ReadableStream as WebReadableStream } from "node:stream/web"
import { NodeStream } from "@effect/platform-node"
import { Effect, Runtime, Stream } from "effect"
import { ZipFile } from "yazl"
import { ObjectStore } from "../../layers/ObjectStore"
import { type EVIDENCE_FILES, KEEP_ARTIFACTS_OF_RUNS, KEEP_TRANSCRIPTS_OF_RUNS, runPrefix, taskEvidenceKey } from "../domain/EvalRun"
import { NotFound, Unavailable } from "../domain/Errors"
import type { Principal } from "../domain/Principal"
import { EvalRunsRepo, shownTask } from "../repos/EvalRunsRepo"
import { EvalAccess } from "./EvalAccess"

/** An export stops before its entries pass this many bytes, and says so in TRUNCATED.txt. */
export const EXPORT_CAP_BYTES = 256 * 1024 * 1024
// Room left under the cap for the archive's own headers and TRUNCATED.txt.
const EXPORT_HEADROOM_BYTES = 1024 * 1024
const PRUNED = `only an organization's newest ${KEEP_ARTIFACTS_OF_RUNS} ended runs keep their tasks' files, and its newest ${KEEP_TRANSCRIPTS_OF_RUNS} their transcripts`

/**
 * An evaluation run's evidence as staff read it: a task's transcript and logs, the run's files, and
 * the whole run as a zip streamed while it is written (never held whole), stopping before 256 MB
 * with a TRUNCATED.txt entry. `run.json` in an export is made from the run as it stands.
 */
export class EvalEvidence extends Effect.Service<EvalEvidence>()("sluice/EvalEvidence", {
  effect: Effect.gen(function* () {
    const repo = yield* EvalRunsRepo
    const access = yield* EvalAccess
    const objects = yield* ObjectStore

    const runOf = (principal: Principal, runId: string) =>
      Effect.flatMap(repo.find(principal.orgId, runId), (found) => (found === null ? Effect.fail(new NotFound({ message: `There is no eval run ${runId}` })) : Effect.succeed(found)))

    /** One file of a task's evidence, streamed; 404 when the run, the task or the file is not there. */
    const file = Effect.fn("EvalEvidence.file")(function* (principal: Principal, runId: string, taskId: string, name: (typeof EVIDENCE_FILES)[number]) {
      yield* access.allowed(principal)
      const { run } = yield* runOf(principal, runId)
      const tasks = yield* repo.tasks(principal.orgId, runId)
      if (!tasks.some((task) => task.task_id === taskId)) return yield* new NotFound({ message: `The eval run ${runId} has no task ${taskId}` })
      const backend = yield* objects.backend
      return yield* backend.get(taskEvidenceKey(principal.orgId, runId, taskId, name)).pipe(
        Effect.catchTag("NotFound", () =>
          Effect.fail(
            new NotFound({
              message:
                run.evidence_pruned === "transcripts" || (run.evidence_pruned === "artifacts" && name !== "transcript.json")
                  ? `The task ${taskId}'s ${name} was deleted by retention: ${PRUNED}`
                  : `The task ${taskId} has no ${name} (the phase that writes it has not run for it)`
            })
          )
        )
      )
    })

    /** The run's stored files, by path under the run. */
    const artifacts = Effect.fn("EvalEvidence.artifacts")(function* (principal: Principal, runId: string) {
      yield* access.allowed(principal)
      yield* runOf(principal, runId)
      const backend = yield* objects.backend
      const prefix = `${runPrefix(principal.orgId, runId)}/`
      const listed = yield* backend.list(prefix)
      return { items: listed.map((object) => ({ path: object.key.slice(prefix.length), size: object.size })) }
    })

    /** The run's evidence as a zip, streamed as it is written; the run's current record as run.json. */
    const exportRun = Effect.fn("EvalEvidence.exportRun")(function* (principal: Principal, runId: string, cap: number = EXPORT_CAP_BYTES) {
      yield* access.allowed(principal)
      const { run } = yield* runOf(principal, runId)
      const tasks = (yield* repo.tasks(principal.orgId, runId)).map(shownTask)
      const backend = yield* objects.backend
      const prefix = `${runPrefix(principal.orgId, runId)}/`
      const listed = (yield* backend.list(prefix)).filter((object) => object.key !== `${prefix}run.json`)
      const runtime = yield* Effect.runtime<never>()
      const zip = new ZipFile()
      const runJson = Buffer.from(JSON.stringify({ run, tasks }, null, 2))
      zip.addBuffer(runJson, "run.json")
      let budget = cap - EXPORT_HEADROOM_BYTES - runJson.length
      const left: Array<string> = []
      for (const object of listed) {
        const name = object.key.slice(prefix.length)
        if (object.size > budget || left.length > 0) {
          left.push(name)
          continue
        }
        budget -= object.size
        zip.addReadStreamLazy(name, { size: object.size }, (done) => {
          Runtime.runCallback(runtime)(backend.get(object.key), {
            onExit: (exit) => {
              if (exit._tag === "Failure") return done(new Error(`${name} could not be read`), undefined as never)
              done(null, Readable.fromWeb(Stream.toReadableStreamRuntime(exit.value.body, runtime) as WebReadableStream))
            }
          })
        })
      }
      if (left.length > 0) {
        zip.addBuffer(
          Buffer.from(`This export stopped before ${Math.round(cap / 1024 / 1024)} MB: ${left.length} file(s) of the run are not in it.\nRead them one by one with GET /api/evals/runs/${runId}/artifacts/{task}/{file}.\n\n${left.join("\n")}\n`),
          "TRUNCATED.txt"
        )
      }
      zip.end()
      const output = zip.outputStream as unknown as Readable
      return NodeStream.fromReadable(
        () => output,
        () => new Unavailable({ message: "The export stopped: evidence could not be read" })
      )
    })

    /**
     * Retention, across organizations: past an organization's newest 10 ended runs, a run's tasks'
     * files but their transcripts are deleted; past its newest 100, the transcripts too. `run.json`,
     * the run's row and its verdicts stay. How many runs it pruned.
     */
    const pruneDue = Effect.gen(function* () {
      const backend = yield* objects.backend
      const due = yield* repo.dueForPruning(KEEP_ARTIFACTS_OF_RUNS, KEEP_TRANSCRIPTS_OF_RUNS)
      for (const { org_id, id, transcripts } of due) {
        const prefix = `${runPrefix(org_id, id)}/tasks/`
        for (const object of yield* backend.list(prefix)) {
          if (transcripts || !object.key.endsWith("/transcript.json")) yield* backend.removePrefix(object.key)
        }
        yield* repo.markPruned(org_id, id, transcripts ? "transcripts" : "artifacts")
      }
      return due.length
    })

    return { file, artifacts, exportRun, pruneDue } as const
  }),
  dependencies: [EvalRunsRepo.Default, EvalAccess.Default, ObjectStore.Default]
}) {}
