import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { DbtProject, DbtProjectScan } from "../domain/DbtProject"
import { OrgId } from "../domain/Ids"
import { conflictOnDuplicate, storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const ProjectRow = Schema.Struct({
  ...DbtProject.omit("counts").fields,
  scan: Schema.NullOr(DbtProjectScan),
  scanned_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type DbtProjectRow = typeof ProjectRow.Type

const NewProject = ProjectRow.pick("name", "source", "path", "workspace_project_id", "subdirectory", "description", "connection_name", "created_by")
const COLUMNS = "name, source, path, workspace_project_id, subdirectory, description, connection_name, scan, scanned_at, scan_error, created_by, created_at, updated_at"
const ByName = Schema.Struct({ orgId: OrgId, name: Schema.String })

/** dbt projects, per org, each with its last scan. */
export class DbtProjectsRepo extends Effect.Service<DbtProjectsRepo>()("sluice/DbtProjectsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("dbt projects store")

    const insertProject = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, row: NewProject }),
      Result: ProjectRow,
      execute: ({ orgId, row }) => sql`insert into dbt_projects ${sql.insert({ ...row, org_id: orgId })} returning ${sql.unsafe(COLUMNS)}`
    })
    const insert = Effect.fn("DbtProjectsRepo.insert")(
      (orgId: OrgId, row: typeof NewProject.Type) => insertProject({ orgId, row }).pipe(conflictOnDuplicate(`A dbt project named ${row.name} already exists`), withOrg(orgId)),
      failures
    )

    const findProject = SqlSchema.findOne({ Request: ByName, Result: ProjectRow, execute: ({ orgId, name }) => sql`select ${sql.unsafe(COLUMNS)} from dbt_projects where org_id = ${orgId} and name = ${name}` })
    const find = Effect.fn("DbtProjectsRepo.find")((orgId: OrgId, name: string) => findProject({ orgId, name }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const listProjects = SqlSchema.findAll({ Request: OrgId, Result: ProjectRow, execute: (orgId) => sql`select ${sql.unsafe(COLUMNS)} from dbt_projects where org_id = ${orgId} order by name limit 500` })
    const list = Effect.fn("DbtProjectsRepo.list")((orgId: OrgId) => listProjects(orgId).pipe(withOrg(orgId)), failures)

    const updateProject = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, name: Schema.String, description: Schema.optional(Schema.String), connection_name: Schema.optional(Schema.NullOr(Schema.String)) }),
      Result: ProjectRow,
      execute: ({ orgId, name, ...change }) =>
        sql`update dbt_projects set ${sql.update(Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined)))}, updated_at = date_trunc('milliseconds', now())
          where org_id = ${orgId} and name = ${name} returning ${sql.unsafe(COLUMNS)}`
    })
    const update = Effect.fn("DbtProjectsRepo.update")(
      (orgId: OrgId, name: string, change: { readonly description?: string | undefined; readonly connection_name?: string | null | undefined }) =>
        updateProject({ orgId, name, ...change }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const saveScanOf = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, name: Schema.String, scan: Schema.NullOr(Schema.String), error: Schema.NullOr(Schema.String) }),
      Result: ProjectRow,
      execute: ({ orgId, name, scan, error }) =>
        sql`update dbt_projects set scan = ${scan}::jsonb, scan_error = ${error}, scanned_at = date_trunc('milliseconds', now())
          where org_id = ${orgId} and name = ${name} returning ${sql.unsafe(COLUMNS)}`
    })
    /** The scan's result (or why it failed, keeping the last good one out), as of now. */
    const saveScan = Effect.fn("DbtProjectsRepo.saveScan")(
      (orgId: OrgId, name: string, scan: DbtProjectScan | null, error: string | null) =>
        saveScanOf({ orgId, name, scan: scan === null ? null : JSON.stringify(scan), error }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const removeProject = SqlSchema.findOne({ Request: ByName, Result: Schema.Struct({ name: Schema.String }), execute: ({ orgId, name }) => sql`delete from dbt_projects where org_id = ${orgId} and name = ${name} returning name` })
    const remove = Effect.fn("DbtProjectsRepo.remove")((orgId: OrgId, name: string) => removeProject({ orgId, name }).pipe(Effect.map(Option.isSome), withOrg(orgId)), failures)

    return { insert, find, list, update, saveScan, remove } as const
  })
}) {}
