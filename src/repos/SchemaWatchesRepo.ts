import { SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schema } from "effect"
import { ConnectionId, OrgId, WatchId } from "../domain/Ids"
import { SchemaDiff } from "../domain/SchemaSnapshot"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const WatchRow = Schema.Struct({
  id: WatchId,
  org_id: OrgId,
  connection_id: ConnectionId,
  connection: Schema.String,
  name: Schema.String,
  tables: Schema.Array(Schema.String),
  interval_seconds: Schema.Number,
  enabled: Schema.Boolean,
  last_version: Schema.NullOr(Schema.Number),
  last_run_at: Schema.NullOr(Schema.DateFromSelf),
  last_error: Schema.NullOr(Schema.String),
  created_by: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf
})
export type WatchRow = typeof WatchRow.Type

const WatchEventRow = Schema.Struct({
  id: Schema.String,
  detected_at: Schema.DateFromSelf,
  from_version: Schema.NullOr(Schema.Number),
  to_version: Schema.Number,
  diff: SchemaDiff
})
export type WatchEventRow = typeof WatchEventRow.Type

const NewWatch = Schema.Struct({
  id: WatchId,
  org_id: OrgId,
  connection_id: ConnectionId,
  name: Schema.String,
  tables: Schema.Array(Schema.String),
  interval_seconds: Schema.Number,
  created_by: Schema.String
})

const WatchRun = Schema.Struct({
  version: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  events: Schema.Array(Schema.Struct({ from_version: Schema.NullOr(Schema.Number), to_version: Schema.Number, diff: SchemaDiff }))
})

const ById = Schema.Struct({ orgId: OrgId, id: WatchId })

const columns = (sql: PgClient.PgClient) =>
  sql`w.id, w.org_id, w.connection_id, c.name as connection, w.name, w.tables, w.interval_seconds, w.enabled, w.last_version,
    w.last_run_at, w.last_error, w.created_by, w.created_at`

/** Schema watches and the changes they saw, per org. */
export class SchemaWatchesRepo extends Effect.Service<SchemaWatchesRepo>()("sluice/SchemaWatchesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("schema watch store")

    const watchesOf = SqlSchema.findAll({
      Request: OrgId,
      Result: WatchRow,
      execute: (orgId) =>
        sql`select ${columns(sql)} from schema_watches w join connections c on c.id = w.connection_id
          where w.org_id = ${orgId} order by w.created_at, w.id`
    })
    const list = Effect.fn("SchemaWatchesRepo.list")((orgId: OrgId) => watchesOf(orgId).pipe(withOrg(orgId)), failures)

    const watchById = SqlSchema.findOne({
      Request: ById,
      Result: WatchRow,
      execute: ({ orgId, id }) =>
        sql`select ${columns(sql)} from schema_watches w join connections c on c.id = w.connection_id
          where w.org_id = ${orgId} and w.id = ${id}`
    })
    const find = Effect.fn("SchemaWatchesRepo.find")((orgId: OrgId, id: WatchId) => watchById({ orgId, id }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const insertWatch = SqlSchema.void({
      Request: NewWatch,
      execute: (row) => sql`insert into schema_watches ${sql.insert({ ...row, tables: [...row.tables] })}`
    })
    const insert = Effect.fn("SchemaWatchesRepo.insert")((row: typeof NewWatch.Type) => insertWatch(row).pipe(withOrg(row.org_id)), failures)

    const removeWatch = SqlSchema.findOne({
      Request: ById,
      Result: Schema.Struct({ id: WatchId }),
      execute: ({ orgId, id }) => sql`delete from schema_watches where org_id = ${orgId} and id = ${id} returning id`
    })
    const remove = Effect.fn("SchemaWatchesRepo.remove")((orgId: OrgId, id: WatchId) => removeWatch({ orgId, id }).pipe(Effect.map(Option.isSome), withOrg(orgId)), failures)

    const writeRun = SqlSchema.void({
      Request: Schema.Struct({ orgId: OrgId, id: WatchId, run: WatchRun }),
      execute: ({ orgId, id, run }) =>
        Effect.gen(function* () {
          for (const event of run.events) {
            yield* sql`insert into schema_watch_events (org_id, watch_id, from_version, to_version, diff)
              values (${orgId}, ${id}, ${event.from_version}, ${event.to_version}, ${JSON.stringify(event.diff)}::jsonb)`
          }
          return yield* sql`update schema_watches set last_run_at = now(), last_error = ${run.error},
              last_version = coalesce(${run.version}, last_version)
            where org_id = ${orgId} and id = ${id}`
        })
    })
    /** Records a run: the version it saw, its error if any, and the events it found, in one transaction. */
    const recordRun = Effect.fn("SchemaWatchesRepo.recordRun")(
      (orgId: OrgId, id: WatchId, run: typeof WatchRun.Type) => writeRun({ orgId, id, run }).pipe(withOrg(orgId)),
      failures
    )

    const eventsOf = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, id: WatchId, limit: Schema.Number }),
      Result: WatchEventRow,
      execute: ({ orgId, id, limit }) =>
        sql`select id::text as id, detected_at, from_version, to_version, diff from schema_watch_events
          where org_id = ${orgId} and watch_id = ${id} order by id desc limit ${limit}`
    })
    const events = Effect.fn("SchemaWatchesRepo.events")((orgId: OrgId, id: WatchId, limit: number) => eventsOf({ orgId, id, limit }).pipe(withOrg(orgId)), failures)

    const dueWatches = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Schema.Struct({ org_id: OrgId, id: WatchId }),
      execute: (limit) =>
        sql`select org_id, id from schema_watches
          where enabled and (last_run_at is null or last_run_at + make_interval(secs => interval_seconds) < now())
          order by last_run_at nulls first limit ${limit}`
    })
    /** Enabled watches of every org whose interval has passed since their last run. */
    const due = Effect.fn("SchemaWatchesRepo.due")((limit: number) => dueWatches(limit), failures)

    return { list, find, insert, remove, recordRun, events, due } as const
  })
}) {}
