import { Effect } from "effect"
import { DEFAULT_EVAL_CONFIG, type EvalConfig, type UpdateEvalConfig } from "../domain/EvalConfig"
import { InvalidRequest } from "../domain/Errors"
import { type Principal, principalLabel } from "../domain/Principal"
import { type EvalConfigRow, EvalConfigsRepo } from "../repos/EvalConfigsRepo"
import { Connections } from "./Connections"
import { EvalAccess } from "./EvalAccess"
import { EvalUploads } from "./EvalUploads"
import { WorkspaceProjects } from "./WorkspaceProjects"

const shown = (row: EvalConfigRow | null): EvalConfig =>
  row === null ? DEFAULT_EVAL_CONFIG : { ...row, updated_at: row.updated_at.toISOString() }

const given = <A>(value: A | undefined, kept: A): A => (value === undefined ? kept : value)

/** An organization's evaluation settings: read by staff with read, changed by staff with admin. */
export class EvalConfigs extends Effect.Service<EvalConfigs>()("sluice/EvalConfigs", {
  effect: Effect.gen(function* () {
    const repo = yield* EvalConfigsRepo
    const access = yield* EvalAccess
    const connections = yield* Connections
    const projects = yield* WorkspaceProjects
    const uploads = yield* EvalUploads

    /** The settings as they are, without the access check (for the run machinery, which checked at its start). */
    const current = Effect.fn("EvalConfigs.current")(function* (principal: Principal) {
      return shown(yield* repo.get(principal.orgId))
    })

    const get = Effect.fn("EvalConfigs.get")(function* (principal: Principal) {
      yield* access.allowed(principal)
      return yield* current(principal)
    })

    const update = Effect.fn("EvalConfigs.update")(function* (principal: Principal, change: UpdateEvalConfig) {
      yield* access.allowed(principal)
      const before = yield* current(principal)
      if (change.connection_name !== undefined && change.connection_name !== null) {
        const name = change.connection_name
        yield* connections.get(principal, name).pipe(Effect.catchTag("NotFound", () => Effect.fail(new InvalidRequest({ message: `connection_name: there is no connection named ${name}` }))))
      }
      const set = change.eval_set
      if (set !== undefined && set !== null && set.kind === "repository") {
        yield* projects.get(principal, set.workspace_project_id).pipe(
          Effect.catchTag("NotFound", () => Effect.fail(new InvalidRequest({ message: `eval_set: there is no workspace project ${set.workspace_project_id}` })))
        )
      }
      if (set !== undefined && set !== null && set.kind === "upload") {
        yield* uploads.archive(principal.orgId, set.upload_id).pipe(Effect.catchTag("NotFound", (e) => Effect.fail(new InvalidRequest({ message: `eval_set: ${e.message}` }))))
      }
      const saved = shown(
        yield* repo.save(principal.orgId, {
          connection_name: given(change.connection_name, before.connection_name),
          eval_set: given(change.eval_set, before.eval_set),
          runner_profile: given(change.runner_profile, before.runner_profile),
          notify_emails: given(change.notify_emails, before.notify_emails),
          prompt_preamble: given(change.prompt_preamble, before.prompt_preamble),
          max_tasks: given(change.max_tasks, before.max_tasks),
          attempts: given(change.attempts, before.attempts),
          model: given(change.model, before.model),
          autorun: given(change.autorun, before.autorun),
          updated_by: principalLabel(principal)
        })
      )
      // Autoruns act as whoever turned autorun on (their credential checked again at each run).
      if (change.autorun === true) yield* repo.setAutorunBy(principal.orgId, { orgId: principal.orgId, userId: principal.userId, principalKind: principal.kind, keyId: principal.keyId })
      if (change.autorun === false) yield* repo.setAutorunBy(principal.orgId, null)
      return saved
    })

    return { get, update, current } as const
  }),
  dependencies: [EvalConfigsRepo.Default, EvalAccess.Default, Connections.Default, WorkspaceProjects.Default, EvalUploads.Default]
}) {}
