import { Effect } from "effect"
import { LOCAL_ORG, LOCAL_USER } from "../../src/domain/Ids"
import { EvalRunsRepo } from "../../src/repos/EvalRunsRepo"

/** An evaluation run id, numbered. */
export const numberedRunId = (n: number) => `evr_${String(n).padStart(32, "0")}`

/**
 * A local run of one read task `t`, written straight to the store as a run ends (no job ran it):
 * graded `verdict` when given, ended with `status`, against `fingerprint`.
 */
export const endedEvalRun = (
  id: string,
  options: { readonly status?: "completed" | "failed"; readonly fingerprint?: string; readonly verdict?: "CORRECT" | "WRONG"; readonly notify?: ReadonlyArray<string> } = {}
) =>
  Effect.gen(function* () {
    const repo = yield* EvalRunsRepo
    yield* repo.insert(
      {
        id,
        org_id: LOCAL_ORG,
        user_id: LOCAL_USER,
        principal_kind: "local",
        key_id: null,
        eval_set_ref: "set@0",
        eval_set_source: { kind: "upload", upload_id: `upl_${"0".repeat(32)}` },
        build_fingerprint: options.fingerprint ?? `sha256:${"0".repeat(64)}`,
        trigger: "api",
        settings: { connection_name: "shop", prompt_preamble: "", max_tasks: 200, attempts: 1, notify_emails: [...(options.notify ?? [])], doc_ids: [], task_ids: null, runner_profile: "python-sandbox", model: null, knowledge: [] },
        total: 1,
        started_on: "test"
      },
      [{ task_id: "t", class: "read" }]
    )
    if (options.verdict !== undefined) yield* repo.grade(LOCAL_ORG, id, "t", { verdict: options.verdict, checks: [], detail: null })
    const status = options.status ?? "completed"
    yield* repo.finish(LOCAL_ORG, id, status === "completed" ? { status } : { status, error: { code: "test", message: "ended by the test" } })
    return id
  })
