import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { DbBranch } from "../domain/DbBranch"
import { OrgId } from "../domain/Ids"
import { conflictOnDuplicate, storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const BranchRow = Schema.Struct({
  ...DbBranch.fields,
  org_id: OrgId,
  owner_role: Schema.String,
  /** The branch role's password, encrypted; null where the branch is reached with the connection's own role (a hosted branch). */
  owner_secret: Schema.NullOr(Schema.String),
  /** A hosted branch's compute and its id at the service; null for a copy on the connection's own server. */
  host: Schema.NullOr(Schema.String),
  port: Schema.NullOr(Schema.Number),
  provider_ref: Schema.NullOr(Schema.String),
  lease_expires_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf
})
export type DbBranchRow = typeof BranchRow.Type

const NewBranch = Schema.Struct({
  ...BranchRow.pick("id", "connection_name", "project", "name", "parent", "provider", "database", "owner_role", "owner_secret", "owner_job", "created_by").fields,
  lease_seconds: Schema.NullOr(Schema.Number)
})

const COLUMNS =
  "id, org_id, connection_name, project, name, parent, provider, database_name as database, owner_role, owner_secret, host, port, provider_ref, status, governance, owner_job, lease_expires_at, created_by, created_at"
const ByName = Schema.Struct({ orgId: OrgId, connection: Schema.String, project: Schema.String, name: Schema.String })
const ById = Schema.Struct({ orgId: OrgId, id: Schema.String })
// A branch whose making or deleting has not finished after this long was left by a process that died mid-way.
const STUCK_MINUTES = 15
const ENDED_RUNS = "('completed', 'failed', 'cancelled')"

/** Database branches, per org; the reaper's query reads across orgs. */
export class DbBranchesRepo extends Effect.Service<DbBranchesRepo>()("sluice/DbBranchesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("database branches store")

    const insertBranch = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, row: NewBranch }),
      Result: BranchRow,
      execute: ({ orgId, row }) => {
        const { database, lease_seconds, ...fields } = row
        return sql`insert into db_branches ${sql.insert({ ...fields, database_name: database, org_id: orgId, status: "creating" })}
          returning ${sql.unsafe(COLUMNS)}`.pipe(
          Effect.flatMap((rows) =>
            lease_seconds === null
              ? Effect.succeed(rows)
              : sql`update db_branches set lease_expires_at = now() + make_interval(secs => ${lease_seconds}) where id = ${row.id} returning ${sql.unsafe(COLUMNS)}`
          )
        )
      }
    })
    /** A branch being made: its name claimed in the project (Conflict when taken). */
    const insert = Effect.fn("DbBranchesRepo.insert")(
      (orgId: OrgId, row: typeof NewBranch.Type) =>
        insertBranch({ orgId, row }).pipe(conflictOnDuplicate(`The project ${row.project} has a branch named ${row.name} already`), withOrg(orgId)),
      failures
    )

    const setStatus = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: Schema.String, from: Schema.Array(Schema.String), to: Schema.String }),
      Result: BranchRow,
      execute: ({ orgId, id, from, to }) =>
        sql`update db_branches set status = ${to} where org_id = ${orgId} and id = ${id} and status in ${sql.in([...from])} returning ${sql.unsafe(COLUMNS)}`
    })
    const readyWith = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: Schema.String, governance: Schema.String }),
      Result: BranchRow,
      execute: ({ orgId, id, governance }) =>
        sql`update db_branches set status = 'ready', governance = ${governance}::jsonb where org_id = ${orgId} and id = ${id} and status = 'creating' returning ${sql.unsafe(COLUMNS)}`
    })
    /** The branch made and governed: ready for use. */
    const markReady = Effect.fn("DbBranchesRepo.markReady")(
      (orgId: OrgId, id: string, governance: { readonly dropped: ReadonlyArray<string>; readonly masked: ReadonlyArray<string>; readonly policy: string }) =>
        readyWith({ orgId, id, governance: JSON.stringify(governance) }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )
    const placeAt = SqlSchema.void({
      Request: Schema.Struct({ orgId: OrgId, id: Schema.String, ref: Schema.String, host: Schema.NullOr(Schema.String), port: Schema.NullOr(Schema.Number) }),
      execute: ({ orgId, id, ref, host, port }) => sql`update db_branches set provider_ref = ${ref}, host = ${host}, port = ${port} where org_id = ${orgId} and id = ${id}`
    })
    /** Where a hosted branch is, recorded as soon as the service has it, so a branch left mid-way is still found to delete. */
    const place = Effect.fn("DbBranchesRepo.place")(
      (orgId: OrgId, id: string, placement: { readonly ref: string; readonly host: string | null; readonly port: number | null }) =>
        placeAt({ orgId, id, ...placement }).pipe(withOrg(orgId)),
      failures
    )
    /** Claims a branch for deleting (once: null where another caller has, or there is none). */
    const markDeleting = Effect.fn("DbBranchesRepo.markDeleting")(
      (orgId: OrgId, id: string, stuck = false) =>
        setStatus({ orgId, id, from: stuck ? ["creating", "ready", "deleting"] : ["ready"], to: "deleting" }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const deleteBranch = SqlSchema.void({ Request: ById, execute: ({ orgId, id }) => sql`delete from db_branches where org_id = ${orgId} and id = ${id}` })
    const remove = Effect.fn("DbBranchesRepo.remove")((orgId: OrgId, id: string) => deleteBranch({ orgId, id }).pipe(withOrg(orgId)), failures)

    const findBranch = SqlSchema.findOne({
      Request: ByName,
      Result: BranchRow,
      execute: ({ orgId, connection, project, name }) =>
        sql`select ${sql.unsafe(COLUMNS)} from db_branches where org_id = ${orgId} and connection_name = ${connection} and project = ${project} and name = ${name}`
    })
    const find = Effect.fn("DbBranchesRepo.find")(
      (orgId: OrgId, connection: string, project: string, name: string) => findBranch({ orgId, connection, project, name }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const listBranches = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, connection: Schema.String, project: Schema.String }),
      Result: BranchRow,
      execute: ({ orgId, connection, project }) =>
        sql`select ${sql.unsafe(COLUMNS)} from db_branches where org_id = ${orgId} and connection_name = ${connection} and project = ${project} order by created_at, id limit 1000`
    })
    const list = Effect.fn("DbBranchesRepo.list")((orgId: OrgId, connection: string, project: string) => listBranches({ orgId, connection, project }).pipe(withOrg(orgId)), failures)

    const ownedRows = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, job: Schema.String }),
      Result: BranchRow,
      execute: ({ orgId, job }) => sql`select ${sql.unsafe(COLUMNS)} from db_branches where org_id = ${orgId} and owner_job = ${job} order by created_at desc limit 1000`
    })
    /** The branches a job owns, newest first (a branch before the one it copies). */
    const ownedBy = Effect.fn("DbBranchesRepo.ownedBy")((orgId: OrgId, job: string) => ownedRows({ orgId, job }).pipe(withOrg(orgId)), failures)

    const dueRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: BranchRow,
      execute: () =>
        sql`select ${sql.unsafe(COLUMNS.split(", ").map((c) => `b.${c}`).join(", "))} from db_branches b
          where b.lease_expires_at < now()
             or (b.status <> 'ready' and b.created_at < now() - make_interval(mins => ${STUCK_MINUTES}))
             or exists (select 1 from agent_runs r where r.org_id = b.org_id and r.id = b.owner_job and r.status in ${sql.unsafe(ENDED_RUNS)})
             or exists (select 1 from eval_runs e where e.org_id = b.org_id and e.id = b.owner_job and e.status in ${sql.unsafe(ENDED_RUNS)})
          order by b.created_at limit 100`
    })
    /** Branches every org has that are due for deleting: lease run out, owning job ended, or left mid-way by a process that died. */
    const due = Effect.fn("DbBranchesRepo.due")(() => dueRows(undefined), failures)

    const countBranches = SqlSchema.single({ Request: OrgId, Result: Schema.Struct({ n: Schema.Number }), execute: (orgId) => sql`select count(*)::int as n from db_branches where org_id = ${orgId}` })
    /** How many branches the org has (each a whole copy of a database on some server). */
    const count = Effect.fn("DbBranchesRepo.count")((orgId: OrgId) => countBranches(orgId).pipe(Effect.map((r) => r.n), withOrg(orgId)), failures)

    const countForConnection = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, connection: Schema.String }),
      Result: Schema.Struct({ n: Schema.Number }),
      execute: ({ orgId, connection }) => sql`select count(*)::int as n from db_branches where org_id = ${orgId} and connection_name = ${connection}`
    })
    /** How many branches one connection has. */
    const countFor = Effect.fn("DbBranchesRepo.countFor")(
      (orgId: OrgId, connection: string) => countForConnection({ orgId, connection }).pipe(Effect.map((r) => r.n), withOrg(orgId)),
      failures
    )

    return { insert, place, markReady, markDeleting, remove, find, list, ownedBy, due, count, countFor } as const
  })
}) {}
