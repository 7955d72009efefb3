import { promisify } from "node:util"
import * as zlib from "node:zlib"
import { SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schema } from "effect"
import { OrgId } from "../domain/Ids"
import { SchemaDiff, type TableInfo } from "../domain/SchemaSnapshot"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

// Off the event loop: a large catalog compresses in the thread pool, not in front of every request.
const gzip = promisify(zlib.gzip)
const gunzip = promisify(zlib.gunzip)

const SnapshotHeader = Schema.Struct({
  version: Schema.Number,
  fingerprint: Schema.String,
  filters: Schema.String,
  scanned_at: Schema.DateFromSelf,
  scan_ms: Schema.Number,
  table_count: Schema.Number,
  column_count: Schema.Number
})
export type SnapshotHeader = typeof SnapshotHeader.Type

// The tables stay gzip'd JSON here: a catalog of thousands of tables is our own write, too large to decode field by field on every load.
const StoredSnapshot = Schema.Struct({ ...SnapshotHeader.fields, tables: Schema.Uint8ArrayFromSelf })

export interface SnapshotRow extends SnapshotHeader {
  readonly tables: ReadonlyArray<TableInfo>
}

const ScanRow = Schema.Struct({
  state: Schema.Literal("running", "done", "failed"),
  phase: Schema.NullOr(Schema.String),
  tables_done: Schema.Number,
  tables_total: Schema.NullOr(Schema.Number),
  started_at: Schema.DateFromSelf,
  finished_at: Schema.NullOr(Schema.DateFromSelf),
  error: Schema.NullOr(Schema.String),
  version: Schema.NullOr(Schema.Number),
  changed: Schema.NullOr(Schema.Boolean)
})
export type ScanRow = typeof ScanRow.Type

const ChangeRow = Schema.Struct({
  id: Schema.String,
  connection: Schema.String,
  from_version: Schema.NullOr(Schema.Number),
  to_version: Schema.Number,
  detected_at: Schema.DateFromSelf,
  diff: SchemaDiff
})
export type ChangeRow = typeof ChangeRow.Type

const OfConnection = Schema.Struct({ orgId: OrgId, connectionId: Schema.String })

/** Schema snapshots, the changes between them and scan progress; every read and write under the org's row-level security. */
export class SchemaRepo extends Effect.Service<SchemaRepo>()("sluice/SchemaRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("schema store")

    const headerOf = SqlSchema.findOne({
      Request: OfConnection,
      Result: SnapshotHeader,
      execute: ({ orgId, connectionId }) =>
        sql`select version, fingerprint, filters, scanned_at, scan_ms, table_count, column_count
          from schema_snapshots where org_id = ${orgId} and connection_id = ${connectionId}`
    })
    const header = Effect.fn("SchemaRepo.header")(
      (orgId: OrgId, connectionId: string) => headerOf({ orgId, connectionId }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const snapshotOf = SqlSchema.findOne({
      Request: OfConnection,
      Result: StoredSnapshot,
      execute: ({ orgId, connectionId }) =>
        sql`select version, fingerprint, filters, scanned_at, scan_ms, table_count, column_count, tables
          from schema_snapshots where org_id = ${orgId} and connection_id = ${connectionId}`
    })
    const load = Effect.fn("SchemaRepo.load")(
      (orgId: OrgId, connectionId: string) =>
        snapshotOf({ orgId, connectionId }).pipe(
          withOrg(orgId),
          Effect.flatMap(
            Option.match({
              onNone: () => Effect.succeed(null),
              onSome: (row) =>
                Effect.map(Effect.promise(() => gunzip(row.tables)), (json): SnapshotRow => ({ ...row, tables: JSON.parse(json.toString("utf8")) }))
            })
          )
        ),
      failures
    )

    const insertSnapshot = SqlSchema.findOne({
      Request: Schema.Struct({ ...OfConnection.fields, next: SnapshotHeader, tables: Schema.Uint8ArrayFromSelf }),
      Result: Schema.Struct({ version: Schema.Number }),
      execute: ({ orgId, connectionId, next, tables }) =>
        sql`insert into schema_snapshots (connection_id, org_id, version, fingerprint, filters, scanned_at, scan_ms, table_count, column_count, tables)
          values (${connectionId}, ${orgId}, ${next.version}, ${next.fingerprint}, ${next.filters}, ${next.scanned_at}, ${next.scan_ms},
            ${next.table_count}, ${next.column_count}, ${tables})
          on conflict (connection_id) do nothing returning version`
    })
    const replaceSnapshot = SqlSchema.findOne({
      Request: Schema.Struct({ ...OfConnection.fields, next: SnapshotHeader, previous: SnapshotHeader, tables: Schema.Uint8ArrayFromSelf }),
      Result: Schema.Struct({ version: Schema.Number }),
      execute: ({ orgId, connectionId, next, previous, tables }) =>
        sql`update schema_snapshots set version = ${next.version}, fingerprint = ${next.fingerprint}, filters = ${next.filters},
            scanned_at = ${next.scanned_at}, scan_ms = ${next.scan_ms}, table_count = ${next.table_count},
            column_count = ${next.column_count}, tables = ${tables}
          where org_id = ${orgId} and connection_id = ${connectionId} and version = ${previous.version}
            and fingerprint = ${previous.fingerprint}
          returning version`
    })
    const insertChange = SqlSchema.void({
      Request: Schema.Struct({ ...OfConnection.fields, fromVersion: Schema.NullOr(Schema.Number), toVersion: Schema.Number, diff: SchemaDiff }),
      execute: ({ orgId, connectionId, fromVersion, toVersion, diff }) =>
        sql`insert into schema_changes (org_id, connection_id, from_version, to_version, diff)
          values (${orgId}, ${connectionId}, ${fromVersion}, ${toVersion}, ${JSON.stringify(diff)}::jsonb)`
    })
    /**
     * Stores a scan over `previous` (null: the first) and, when it changed the structure, the change.
     * False when another replica stored a scan first; the caller reloads.
     */
    const save = Effect.fn("SchemaRepo.save")(
      function* (orgId: OrgId, connectionId: string, next: SnapshotRow, previous: SnapshotHeader | null, diff: SchemaDiff | null) {
        const tables = yield* Effect.promise(() => gzip(JSON.stringify(next.tables)))
        const stored =
          previous === null
            ? yield* insertSnapshot({ orgId, connectionId, next, tables })
            : yield* replaceSnapshot({ orgId, connectionId, next, previous, tables })
        if (Option.isNone(stored)) return false
        if (diff !== null) yield* insertChange({ orgId, connectionId, fromVersion: previous?.version ?? null, toVersion: next.version, diff })
        return true
      },
      (effect, orgId) => withOrg(orgId)(effect),
      failures
    )

    const startScan = SqlSchema.void({
      Request: OfConnection,
      execute: ({ orgId, connectionId }) =>
        sql`insert into schema_scans (connection_id, org_id, state, phase, tables_done, tables_total, started_at)
          values (${connectionId}, ${orgId}, 'running', 'queued', 0, null, now())
          on conflict (connection_id) do update set state = 'running', phase = 'queued', tables_done = 0, tables_total = null,
            started_at = now(), finished_at = null, error = null, version = null, changed = null`
    })
    const scanStarted = Effect.fn("SchemaRepo.scanStarted")((orgId: OrgId, connectionId: string) => startScan({ orgId, connectionId }).pipe(withOrg(orgId)), failures)

    const progress = SqlSchema.void({
      Request: Schema.Struct({ ...OfConnection.fields, phase: Schema.String, done: Schema.Number, total: Schema.NullOr(Schema.Number) }),
      execute: ({ orgId, connectionId, phase, done, total }) =>
        sql`update schema_scans set phase = ${phase}, tables_done = ${done}, tables_total = ${total}
          where org_id = ${orgId} and connection_id = ${connectionId} and state = 'running'`
    })
    const scanProgress = Effect.fn("SchemaRepo.scanProgress")(
      (orgId: OrgId, connectionId: string, phase: string, done: number, total: number | null) => progress({ orgId, connectionId, phase, done, total }).pipe(withOrg(orgId)),
      failures
    )

    const finishScan = SqlSchema.void({
      Request: Schema.Struct({
        ...OfConnection.fields,
        outcome: Schema.Union(Schema.Struct({ version: Schema.Number, changed: Schema.Boolean, tables: Schema.Number }), Schema.Struct({ error: Schema.String }))
      }),
      execute: ({ orgId, connectionId, outcome }) =>
        "error" in outcome
          ? sql`update schema_scans set state = 'failed', phase = 'failed', finished_at = now(), error = ${outcome.error}
              where org_id = ${orgId} and connection_id = ${connectionId}`
          : sql`update schema_scans set state = 'done', phase = 'done', finished_at = now(), tables_done = ${outcome.tables},
              tables_total = ${outcome.tables}, version = ${outcome.version}, changed = ${outcome.changed}
              where org_id = ${orgId} and connection_id = ${connectionId}`
    })
    const scanFinished = Effect.fn("SchemaRepo.scanFinished")(
      (orgId: OrgId, connectionId: string, outcome: { version: number; changed: boolean; tables: number } | { error: string }) =>
        finishScan({ orgId, connectionId, outcome }).pipe(withOrg(orgId)),
      failures
    )

    const scanOf = SqlSchema.findOne({
      Request: OfConnection,
      Result: ScanRow,
      execute: ({ orgId, connectionId }) =>
        sql`select state, phase, tables_done, tables_total, started_at, finished_at, error, version, changed
          from schema_scans where org_id = ${orgId} and connection_id = ${connectionId}`
    })
    const scanStatus = Effect.fn("SchemaRepo.scanStatus")(
      (orgId: OrgId, connectionId: string) => scanOf({ orgId, connectionId }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const changesOf = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, connectionId: Schema.NullOr(Schema.String), limit: Schema.Number, before: Schema.NullOr(Schema.String) }),
      Result: ChangeRow,
      execute: ({ orgId, connectionId, limit, before }) =>
        sql`select ch.id::text as id, c.name as connection, ch.from_version, ch.to_version, ch.detected_at, ch.diff
          from schema_changes ch join connections c on c.id = ch.connection_id
          where ch.org_id = ${orgId} ${connectionId === null ? sql`` : sql`and ch.connection_id = ${connectionId}`}
          ${before === null ? sql`` : sql`and ch.id < ${before}::bigint`}
          order by ch.id desc limit ${limit}`
    })
    /** The org's changes, newest first, optionally of one connection, before the change id `before`. */
    const changes = Effect.fn("SchemaRepo.changes")(
      (orgId: OrgId, connectionId: string | null, limit: number, before: string | null) => changesOf({ orgId, connectionId, limit, before }).pipe(withOrg(orgId)),
      failures
    )

    const staleSnapshots = SqlSchema.findAll({
      Request: Schema.Struct({ defaultIntervalSeconds: Schema.Number, limit: Schema.Number }),
      Result: Schema.Struct({ org_id: OrgId, connection_id: Schema.String, name: Schema.String }),
      execute: ({ defaultIntervalSeconds, limit }) =>
        sql`select s.org_id, s.connection_id, c.name
          from schema_snapshots s join connections c on c.id = s.connection_id
          cross join lateral (select make_interval(secs => coalesce((c.settings->>'schema_refresh_interval')::int, ${defaultIntervalSeconds})) as every) i
          left join schema_scans sc on sc.connection_id = s.connection_id
          where s.scanned_at + i.every < now()
            and not coalesce(sc.state = 'running' and sc.started_at > now() - interval '1 hour', false)
            and not coalesce(sc.state = 'failed' and sc.finished_at > now() - i.every, false)
          order by s.scanned_at limit ${limit}`
    })
    /**
     * Connections of every org whose snapshot is older than their refresh interval, that no replica
     * is scanning, and whose last scan did not fail within the interval (a failing one waits a turn).
     */
    const dueForRefresh = Effect.fn("SchemaRepo.dueForRefresh")(
      (defaultIntervalSeconds: number, limit: number) => staleSnapshots({ defaultIntervalSeconds, limit }),
      failures
    )

    return { header, load, save, scanStarted, scanProgress, scanFinished, scanStatus, changes, dueForRefresh } as const
  })
}) {}
