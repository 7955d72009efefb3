import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import type { SchemaDiff } from "../domain/SchemaSnapshot"
import { tenantScope } from "./Tenant"

export interface WatchRow {
  readonly id: string
  readonly org_id: OrgId
  readonly connection_id: string
  readonly connection: string
  readonly name: string
  readonly tables: ReadonlyArray<string>
  readonly interval_seconds: number
  readonly enabled: boolean
  readonly last_version: number | null
  readonly last_run_at: Date | null
  readonly last_error: string | null
  readonly created_by: string | null
  readonly created_at: Date
}

export interface WatchEventRow {
  readonly id: string
  readonly detected_at: Date
  readonly from_version: number | null
  readonly to_version: number
  readonly diff: SchemaDiff
}

const columns = (sql: PgClient.PgClient) =>
  sql`w.id, w.org_id, w.connection_id, c.name as connection, w.name, w.tables, w.interval_seconds, w.enabled, w.last_version,
    w.last_run_at, w.last_error, w.created_by, w.created_at`

/** Schema watches and the changes they saw, per org. */
export class SchemaWatchesRepo extends Effect.Service<SchemaWatchesRepo>()("sluice/SchemaWatchesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)

    const list = (orgId: OrgId) =>
      sql<WatchRow>`select ${columns(sql)} from schema_watches w join connections c on c.id = w.connection_id
        where w.org_id = ${orgId} order by w.created_at, w.id`.pipe(withOrg(orgId))

    const find = (orgId: OrgId, id: string) =>
      sql<WatchRow>`select ${columns(sql)} from schema_watches w join connections c on c.id = w.connection_id
        where w.org_id = ${orgId} and w.id = ${id}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    const insert = (row: { id: string; org_id: OrgId; connection_id: string; name: string; tables: ReadonlyArray<string>; interval_seconds: number; created_by: string }) =>
      sql`insert into schema_watches ${sql.insert({ ...row, tables: [...row.tables] })}`.pipe(Effect.asVoid, withOrg(row.org_id))

    const remove = (orgId: OrgId, id: string) =>
      sql<{ id: string }>`delete from schema_watches where org_id = ${orgId} and id = ${id} returning id`.pipe(
        Effect.map((rows) => rows.length > 0),
        withOrg(orgId)
      )

    /** Records a run: the version it saw, its error if any, and the events it found, in one transaction. */
    const recordRun = (
      orgId: OrgId,
      id: string,
      run: { readonly version: number | null; readonly error: string | null; readonly events: ReadonlyArray<{ from_version: number | null; to_version: number; diff: SchemaDiff }> }
    ) =>
      Effect.gen(function* () {
        for (const event of run.events) {
          yield* sql`insert into schema_watch_events (org_id, watch_id, from_version, to_version, diff)
            values (${orgId}, ${id}, ${event.from_version}, ${event.to_version}, ${JSON.stringify(event.diff)}::jsonb)`
        }
        yield* sql`update schema_watches set last_run_at = now(), last_error = ${run.error},
            last_version = coalesce(${run.version}, last_version)
          where org_id = ${orgId} and id = ${id}`
      }).pipe(withOrg(orgId))

    const events = (orgId: OrgId, id: string, limit: number) =>
      sql<WatchEventRow>`select id::text as id, detected_at, from_version, to_version, diff from schema_watch_events
        where org_id = ${orgId} and watch_id = ${id} order by id desc limit ${limit}`.pipe(withOrg(orgId))

    /** Enabled watches of every org whose interval has passed since their last run. */
    const due = (limit: number) =>
      sql<{ org_id: OrgId; id: string }>`select org_id, id from schema_watches
        where enabled and (last_run_at is null or last_run_at + make_interval(secs => interval_seconds) < now())
        order by last_run_at nulls first limit ${limit}`

    return { list, find, insert, remove, recordRun, events, due } as const
  })
}) {}
