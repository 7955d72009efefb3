import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { OrgId, WorkspaceProjectId } from "../domain/Ids"
import { WorkspaceProject, WorkspaceProjectStatus } from "../domain/WorkspaceProject"
import { conflictOnDuplicate, storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const ProjectRow = Schema.Struct({ ...WorkspaceProject.fields, id: WorkspaceProjectId, created_at: Schema.DateFromSelf, updated_at: Schema.DateFromSelf })
export type WorkspaceProjectRow = typeof ProjectRow.Type

const NewProject = Schema.Struct({
  ...WorkspaceProject.pick("name", "display_name", "description", "source", "connection_name", "default_branch", "protected_branches", "tags").fields,
  id: WorkspaceProjectId,
  by: Schema.String
})

const ProjectChange = Schema.Struct({
  name: Schema.optional(Schema.String),
  display_name: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  connection_name: Schema.optional(Schema.NullOr(Schema.String)),
  default_branch: Schema.optional(Schema.String),
  protected_branches: Schema.optional(Schema.Array(Schema.String)),
  tags: Schema.optional(Schema.Array(Schema.String)),
  status: Schema.optional(WorkspaceProjectStatus),
  by: Schema.String
})

const ById = Schema.Struct({ orgId: OrgId, id: WorkspaceProjectId })
const COLUMNS = "id, name, display_name, description, source, connection_name, default_branch, protected_branches, tags, status, created_by, updated_by, created_at, updated_at"
const taken = (name: string) => `A workspace project named "${name}" already exists in this organization`

/** Workspace projects, per org. */
export class WorkspaceProjectsRepo extends Effect.Service<WorkspaceProjectsRepo>()("sluice/WorkspaceProjectsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("workspace projects store")

    const insertProject = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, row: NewProject }),
      Result: ProjectRow,
      execute: ({ orgId, row }) => {
        const { by, ...fields } = row
        return sql`insert into workspace_projects ${sql.insert({
          ...fields,
          protected_branches: [...fields.protected_branches],
          tags: [...fields.tags],
          org_id: orgId,
          status: "active",
          created_by: by,
          updated_by: by
        })} returning ${sql.unsafe(COLUMNS)}`
      }
    })
    /** A new project's record, in the transaction `alongside` runs in (its repository made there: no record without one, none left without its record). */
    const insert = Effect.fn("WorkspaceProjectsRepo.insert")(
      <E, R>(orgId: OrgId, row: typeof NewProject.Type, alongside: Effect.Effect<void, E, R>) =>
        insertProject({ orgId, row }).pipe(Effect.tap(() => alongside), conflictOnDuplicate(taken(row.name)), withOrg(orgId)),
      failures
    )

    const findProject = SqlSchema.findOne({
      Request: ById,
      Result: ProjectRow,
      execute: ({ orgId, id }) => sql`select ${sql.unsafe(COLUMNS)} from workspace_projects where org_id = ${orgId} and id = ${id}`
    })
    /** The project, or null where this org has none by that id. */
    const find = Effect.fn("WorkspaceProjectsRepo.find")((orgId: OrgId, id: WorkspaceProjectId) => findProject({ orgId, id }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const updateProject = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: WorkspaceProjectId, change: ProjectChange }),
      Result: ProjectRow,
      execute: ({ orgId, id, change }) => {
        const { by, protected_branches, tags, ...fields } = change
        const defined = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined))
        const textArray = (list: ReadonlyArray<string>) => sql`array(select jsonb_array_elements_text(${JSON.stringify(list)}::jsonb))`
        return sql`update workspace_projects set ${sql.update({ ...defined, updated_by: by })},
          ${protected_branches === undefined ? sql`` : sql`protected_branches = ${textArray(protected_branches)},`}
          ${tags === undefined ? sql`` : sql`tags = ${textArray(tags)},`}
          updated_at = date_trunc('milliseconds', now()) where org_id = ${orgId} and id = ${id} returning ${sql.unsafe(COLUMNS)}`
      }
    })
    const update = Effect.fn("WorkspaceProjectsRepo.update")(
      (orgId: OrgId, id: WorkspaceProjectId, change: typeof ProjectChange.Type) =>
        updateProject({ orgId, id, change }).pipe(Effect.map(Option.getOrNull), conflictOnDuplicate(taken(change.name ?? "")), withOrg(orgId)),
      failures
    )

    const removeProject = SqlSchema.findOne({
      Request: ById,
      Result: Schema.Struct({ id: WorkspaceProjectId }),
      execute: ({ orgId, id }) => sql`delete from workspace_projects where org_id = ${orgId} and id = ${id} returning id`
    })
    /** Deletes the record in the transaction `alongside` runs in (its repository removed there); false where there was none. */
    const remove = Effect.fn("WorkspaceProjectsRepo.remove")(
      <E, R>(orgId: OrgId, id: WorkspaceProjectId, alongside: Effect.Effect<void, E, R>) =>
        removeProject({ orgId, id }).pipe(
          Effect.flatMap((removed) => (Option.isSome(removed) ? Effect.as(alongside, true) : Effect.succeed(false))),
          withOrg(orgId)
        ),
      failures
    )

    const pageOfProjects = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, before: Schema.NullOr(Schema.Tuple(Schema.String, Schema.String)), limit: Schema.Number }),
      Result: ProjectRow,
      execute: ({ orgId, before, limit }) =>
        sql`select ${sql.unsafe(COLUMNS)} from workspace_projects where org_id = ${orgId}
          ${before === null ? sql`` : sql`and (created_at, id) < (${before[0]}::timestamptz, ${before[1]})`}
          order by created_at desc, id desc limit ${limit}`
    })
    /** A page of projects, newest first, after the (created_at, id) of the last one seen. */
    const page = Effect.fn("WorkspaceProjectsRepo.page")(
      (orgId: OrgId, before: readonly [string, string] | null, limit: number) => pageOfProjects({ orgId, before, limit }).pipe(withOrg(orgId)),
      failures
    )

    return { insert, find, update, remove, page } as const
  })
}) {}
