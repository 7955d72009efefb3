import { Chunk, Effect } from "effect"
import { COVERAGE_AUDIT_ROWS, modelCoverage } from "../domain/EvalCoverage"
import { attemptOf, type EvalRun } from "../domain/EvalRun"
import type { EvalSetManifest } from "../domain/EvalSet"
import type { Principal } from "../domain/Principal"
import { parsableRedacted } from "../governance/RedactSql"
import { relationsRead } from "../governance/RelationsRead"
import { SqlGuard } from "../governance/sqlguard/SqlGuard"
import { AuditRepo } from "../repos/AuditRepo"
import { EvalRunsRepo } from "../repos/EvalRunsRepo"
import { Connections } from "./Connections"
import { DbtProjects } from "./DbtProjects"

// Statements parsed between yields: a run's 50,000 never hold the event loop for long.
const PARSE_BATCH = 200

/**
 * A run's coverage of its set's dbt project: the models its tasks declare (`covers`, `builds` of
 * the tasks it ran) and those its tasks' keys read, from the audit log (at most 50,000 rows),
 * parsed as the pinned connection's dialect. Null when the set names no project or it has no scan.
 */
export class RunCoverage extends Effect.Service<RunCoverage>()("sluice/RunCoverage", {
  effect: Effect.gen(function* () {
    const runs = yield* EvalRunsRepo
    const audit = yield* AuditRepo
    const projects = yield* DbtProjects
    const connections = yield* Connections
    const guard = yield* SqlGuard

    const of = Effect.fn("RunCoverage.of")(function* (principal: Principal, run: EvalRun, manifest: EvalSetManifest) {
      if (manifest.dbt_project === undefined) return null
      const project = yield* projects.get(principal, manifest.dbt_project)
      if (project.scan === null) return null
      const ran = new Set((yield* runs.tasks(principal.orgId, run.id)).map((task) => attemptOf(task.task_id).taskId))
      const declared = manifest.tasks.filter((task) => ran.has(task.id)).flatMap((task) => [...(task.covers ?? []), ...(task.builds ?? [])])
      const keys = yield* runs.auditKeyIds(principal.orgId, run.id)
      // The audit log's times are whole seconds.
      const since = Math.floor((run.started_at ?? run.created_at).getTime() / 1000) - 1
      const statements = yield* audit.statementsOf(principal.orgId, keys, since, Math.ceil(Date.now() / 1000) + 1, COVERAGE_AUDIT_ROWS + 1)
      const read = statements.slice(0, COVERAGE_AUDIT_ROWS)
      const { db_type } = yield* connections.get(principal, run.settings.connection_name)
      // The audit log keeps statements with their values redacted; a statement logged twice (its query and its tool call) is read once.
      const distinct = [...new Set(read)].map((sql) => parsableRedacted(sql, db_type))
      const relations: Array<ReadonlyArray<string>> = []
      let unparsed = 0
      for (const batch of Chunk.chunksOf(Chunk.unsafeFromArray(distinct), PARSE_BATCH)) {
        const parsed = relationsRead(guard, batch, db_type)
        relations.push(...parsed.relations)
        unparsed += parsed.unparsed
        yield* Effect.yieldNow()
      }
      return modelCoverage(project.scan.models, declared, relations, { rowsRead: read.length, capped: statements.length > COVERAGE_AUDIT_ROWS, unparsed })
    })

    return { of } as const
  }),
  dependencies: [EvalRunsRepo.Default, AuditRepo.Default, DbtProjects.Default, Connections.Default, SqlGuard.Default]
}) {}
