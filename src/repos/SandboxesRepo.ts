import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { KeyId, OrgId, SandboxId, UserId } from "../domain/Ids"
import { SandboxStatus } from "../domain/Sandbox"
import { Scope } from "../domain/Scope"
import { Starter } from "../domain/Starter"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

export const SandboxRow = Schema.Struct({
  id: SandboxId,
  org_id: OrgId,
  user_id: UserId,
  principal_kind: Schema.Literal("api_key", "jwt", "local"),
  key_id: Schema.NullOr(KeyId),
  created_by: Schema.String,
  scopes: Schema.Array(Scope),
  label: Schema.NullOr(Schema.String),
  connection_name: Schema.NullOr(Schema.String),
  row_limit: Schema.NullOr(Schema.Int),
  budget_usd: Schema.NullOr(Schema.Number),
  spent_usd: Schema.Number,
  timeout_seconds: Schema.Int,
  memory_mb: Schema.NullOr(Schema.Int),
  status: SandboxStatus,
  error: Schema.NullOr(Schema.String),
  host: Schema.NullOr(Schema.String),
  executions: Schema.Int,
  queries: Schema.Int,
  unpicklable: Schema.Array(Schema.String),
  snapshot_bytes: Schema.NullOr(Schema.NumberFromString),
  created_at: Schema.DateFromSelf,
  last_used_at: Schema.DateFromSelf,
  snapshotted_at: Schema.NullOr(Schema.DateFromSelf)
})
export type SandboxRow = typeof SandboxRow.Type

const NewSandbox = Schema.Struct({
  ...SandboxRow.pick("id", "user_id", "principal_kind", "key_id", "created_by", "scopes", "label", "connection_name", "row_limit", "budget_usd", "timeout_seconds", "memory_mb").fields,
  host: Schema.String
})

const ById = Schema.Struct({ orgId: OrgId, id: SandboxId })
const COLUMNS = `id, org_id, user_id, principal_kind, key_id, created_by, scopes, label, connection_name, row_limit, budget_usd, spent_usd,
  timeout_seconds, memory_mb, status, error, host, executions, queries, unpicklable, snapshot_bytes::text as snapshot_bytes, created_at, last_used_at, snapshotted_at`

/** What a change of a sandbox's state writes: its status and what goes with it. */
export interface SandboxChange {
  readonly status?: SandboxStatus
  readonly error?: string | null
  readonly host?: string | null
  readonly unpicklable?: ReadonlyArray<string>
  readonly snapshotBytes?: number | null
  readonly snapshotted?: boolean
  readonly used?: boolean
  /** What it has done in all, as its holding process counted. */
  readonly counters?: { readonly executions: number; readonly queries: number; readonly spentUsd: number }
}

/** Sandboxes' records, per org. */
export class SandboxesRepo extends Effect.Service<SandboxesRepo>()("sluice/SandboxesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("sandboxes store")

    const insertSandbox = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, row: NewSandbox }),
      Result: SandboxRow,
      execute: ({ orgId, row }) =>
        sql`insert into sandboxes ${sql.insert({ ...row, org_id: orgId, scopes: [...row.scopes], status: "starting" })} returning ${sql.unsafe(COLUMNS)}`
    })
    const insert = Effect.fn("SandboxesRepo.insert")((orgId: OrgId, row: typeof NewSandbox.Type) => insertSandbox({ orgId, row }).pipe(withOrg(orgId)), failures)

    const findSandbox = SqlSchema.findOne({
      Request: ById,
      Result: SandboxRow,
      execute: ({ orgId, id }) => sql`select ${sql.unsafe(COLUMNS)} from sandboxes where org_id = ${orgId} and id = ${id}`
    })
    const find = Effect.fn("SandboxesRepo.find")((orgId: OrgId, id: SandboxId) => findSandbox({ orgId, id }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const changeSandbox = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: SandboxId, change: Schema.Unknown }),
      Result: SandboxRow,
      execute: ({ orgId, id, change: raw }) => {
        const change = raw as SandboxChange
        const set: Record<string, unknown> = {
          ...(change.status === undefined ? {} : { status: change.status }),
          ...(change.error === undefined ? {} : { error: change.error }),
          ...(change.host === undefined ? {} : { host: change.host }),
          ...(change.snapshotBytes === undefined ? {} : { snapshot_bytes: change.snapshotBytes })
        }
        const parts = [
          ...Object.entries(set).map(([column, value]) => sql`${sql(column)} = ${value as string | number | null}`),
          ...(change.unpicklable === undefined ? [] : [sql`unpicklable = array(select jsonb_array_elements_text(${JSON.stringify(change.unpicklable)}::jsonb))`]),
          ...(change.snapshotted === undefined ? [] : [change.snapshotted ? sql`snapshotted_at = date_trunc('milliseconds', now())` : sql`snapshotted_at = null`]),
          ...(change.used === true ? [sql`last_used_at = date_trunc('milliseconds', now())`] : []),
          ...(change.counters === undefined
            ? []
            : [sql`executions = ${change.counters.executions}`, sql`queries = ${change.counters.queries}`, sql`spent_usd = ${change.counters.spentUsd}`]),
          ...(change.status === "stopped" || change.status === "error" ? [sql`stopped_at = date_trunc('milliseconds', now())`] : [])
        ]
        return sql`update sandboxes set ${sql.csv(parts)} where org_id = ${orgId} and id = ${id} returning ${sql.unsafe(COLUMNS)}`
      }
    })
    /** Changes the sandbox's state; null when there is no such sandbox. */
    const change = Effect.fn("SandboxesRepo.change")(
      (orgId: OrgId, id: SandboxId, change: SandboxChange) => changeSandbox({ orgId, id, change }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const pageOfSandboxes = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, starter: Starter, before: Schema.NullOr(Schema.Tuple(Schema.String, Schema.String)), limit: Schema.Number }),
      Result: SandboxRow,
      execute: ({ orgId, starter, before, limit }) =>
        sql`select ${sql.unsafe(COLUMNS)} from sandboxes where org_id = ${orgId}
          and user_id = ${starter.userId} and principal_kind = ${starter.kind} and key_id is not distinct from ${starter.keyId}
          ${before === null ? sql`` : sql`and (created_at, id) < (${before[0]}::timestamptz, ${before[1]})`}
          order by created_at desc, id desc limit ${limit}`
    })
    /** A page of the sandboxes one credential started, newest first, after the (created_at, id) of the last one seen. */
    const page = Effect.fn("SandboxesRepo.page")(
      (orgId: OrgId, starter: typeof Starter.Type, before: readonly [string, string] | null, limit: number) => pageOfSandboxes({ orgId, starter, before, limit }).pipe(withOrg(orgId)),
      failures
    )

    const held = SqlSchema.findAll({
      Request: Schema.Struct({ host: Schema.String }),
      Result: Schema.Struct({ id: SandboxId, org_id: OrgId, snapshotted_at: Schema.NullOr(Schema.DateFromSelf) }),
      execute: ({ host }) => sql`select id, org_id, snapshotted_at from sandboxes where host = ${host} and status in ('starting', 'running', 'idle')`
    })
    /** Every org's sandboxes a gateway process held running when it stopped (system work: it runs as the store's owner). */
    const heldBy = Effect.fn("SandboxesRepo.heldBy")((host: string) => held({ host }), failures)

    const expiredSnapshots = SqlSchema.findAll({
      Request: Schema.Struct({ olderThanSeconds: Schema.Number }),
      Result: Schema.Struct({ id: SandboxId, org_id: OrgId }),
      execute: ({ olderThanSeconds }) =>
        sql`select id, org_id from sandboxes where status = 'snapshotted' and snapshotted_at < now() - make_interval(secs => ${olderThanSeconds}) limit 100`
    })
    /** Every org's sandboxes whose snapshot is older than `olderThanSeconds` (system work). */
    const expired = Effect.fn("SandboxesRepo.expired")((olderThanSeconds: number) => expiredSnapshots({ olderThanSeconds }), failures)

    return { insert, find, change, page, heldBy, expired } as const
  })
}) {}
