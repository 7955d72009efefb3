import { promisify } from "node:util"
import * as zlib from "node:zlib"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import type { SchemaDiff, TableInfo } from "../domain/SchemaSnapshot"
import { tenantScope } from "./Tenant"

// Off the event loop: a large catalog compresses in the thread pool, not in front of every request.
const gzip = promisify(zlib.gzip)
const gunzip = promisify(zlib.gunzip)

export interface SnapshotHeader {
  readonly version: number
  readonly fingerprint: string
  readonly filters: string
  readonly scanned_at: Date
  readonly scan_ms: number
  readonly table_count: number
  readonly column_count: number
}

export interface SnapshotRow extends SnapshotHeader {
  readonly tables: ReadonlyArray<TableInfo>
}

export interface ScanRow {
  readonly state: "running" | "done" | "failed"
  readonly phase: string | null
  readonly tables_done: number
  readonly tables_total: number | null
  readonly started_at: Date
  readonly finished_at: Date | null
  readonly error: string | null
  readonly version: number | null
  readonly changed: boolean | null
}

export interface ChangeRow {
  readonly id: string
  readonly connection: string
  readonly from_version: number | null
  readonly to_version: number
  readonly detected_at: Date
  readonly diff: SchemaDiff
}

export interface NewSnapshot extends SnapshotHeader {
  readonly tables: ReadonlyArray<TableInfo>
}

/** Schema snapshots, the changes between them and scan progress; every read and write under the org's row-level security. */
export class SchemaRepo extends Effect.Service<SchemaRepo>()("sluice/SchemaRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)

    const header = (orgId: OrgId, connectionId: string) =>
      sql<SnapshotHeader>`select version, fingerprint, filters, scanned_at, scan_ms, table_count, column_count
        from schema_snapshots where org_id = ${orgId} and connection_id = ${connectionId}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    const load = (orgId: OrgId, connectionId: string) =>
      sql<SnapshotHeader & { tables: Buffer }>`select version, fingerprint, filters, scanned_at, scan_ms, table_count, column_count, tables
        from schema_snapshots where org_id = ${orgId} and connection_id = ${connectionId}`.pipe(
        withOrg(orgId),
        Effect.flatMap((rows) => {
          const row = rows[0]
          return row === undefined
            ? Effect.succeed(null)
            : Effect.map(Effect.promise(() => gunzip(row.tables)), (json): SnapshotRow => ({ ...row, tables: JSON.parse(json.toString("utf8")) }))
        })
      )

    /**
     * Stores a scan over `previous` (null: the first) and, when it changed the structure, the change.
     * False when another replica stored a scan first; the caller reloads.
     */
    const save = (orgId: OrgId, connectionId: string, next: NewSnapshot, previous: SnapshotHeader | null, diff: SchemaDiff | null) =>
      Effect.gen(function* () {
        const tables = yield* Effect.promise(() => gzip(JSON.stringify(next.tables)))
        const stored =
          previous === null
            ? yield* sql`insert into schema_snapshots (connection_id, org_id, version, fingerprint, filters, scanned_at, scan_ms, table_count, column_count, tables)
                values (${connectionId}, ${orgId}, ${next.version}, ${next.fingerprint}, ${next.filters}, ${next.scanned_at}, ${next.scan_ms},
                  ${next.table_count}, ${next.column_count}, ${tables})
                on conflict (connection_id) do nothing returning version`
            : yield* sql`update schema_snapshots set version = ${next.version}, fingerprint = ${next.fingerprint}, filters = ${next.filters},
                  scanned_at = ${next.scanned_at}, scan_ms = ${next.scan_ms}, table_count = ${next.table_count},
                  column_count = ${next.column_count}, tables = ${tables}
                where org_id = ${orgId} and connection_id = ${connectionId} and version = ${previous.version}
                  and fingerprint = ${previous.fingerprint}
                returning version`
        if (stored.length === 0) return false
        if (diff !== null) {
          yield* sql`insert into schema_changes (org_id, connection_id, from_version, to_version, diff)
            values (${orgId}, ${connectionId}, ${previous?.version ?? null}, ${next.version}, ${JSON.stringify(diff)}::jsonb)`
        }
        return true
      }).pipe(withOrg(orgId))

    const scanStarted = (orgId: OrgId, connectionId: string) =>
      sql`insert into schema_scans (connection_id, org_id, state, phase, tables_done, tables_total, started_at)
        values (${connectionId}, ${orgId}, 'running', 'queued', 0, null, now())
        on conflict (connection_id) do update set state = 'running', phase = 'queued', tables_done = 0, tables_total = null,
          started_at = now(), finished_at = null, error = null, version = null, changed = null`.pipe(Effect.asVoid, withOrg(orgId))

    const scanProgress = (orgId: OrgId, connectionId: string, phase: string, done: number, total: number | null) =>
      sql`update schema_scans set phase = ${phase}, tables_done = ${done}, tables_total = ${total}
        where org_id = ${orgId} and connection_id = ${connectionId} and state = 'running'`.pipe(Effect.asVoid, withOrg(orgId))

    const scanFinished = (orgId: OrgId, connectionId: string, outcome: { version: number; changed: boolean; tables: number } | { error: string }) =>
      ("error" in outcome
        ? sql`update schema_scans set state = 'failed', phase = 'failed', finished_at = now(), error = ${outcome.error}
            where org_id = ${orgId} and connection_id = ${connectionId}`
        : sql`update schema_scans set state = 'done', phase = 'done', finished_at = now(), tables_done = ${outcome.tables},
            tables_total = ${outcome.tables}, version = ${outcome.version}, changed = ${outcome.changed}
            where org_id = ${orgId} and connection_id = ${connectionId}`
      ).pipe(Effect.asVoid, withOrg(orgId))

    const scanStatus = (orgId: OrgId, connectionId: string) =>
      sql<ScanRow>`select state, phase, tables_done, tables_total, started_at, finished_at, error, version, changed
        from schema_scans where org_id = ${orgId} and connection_id = ${connectionId}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    /** The org's changes, newest first, optionally of one connection, before the change id `before`. */
    const changes = (orgId: OrgId, connectionId: string | null, limit: number, before: string | null) =>
      sql<ChangeRow>`select ch.id::text as id, c.name as connection, ch.from_version, ch.to_version, ch.detected_at, ch.diff
        from schema_changes ch join connections c on c.id = ch.connection_id
        where ch.org_id = ${orgId} ${connectionId === null ? sql`` : sql`and ch.connection_id = ${connectionId}`}
        ${before === null ? sql`` : sql`and ch.id < ${before}::bigint`}
        order by ch.id desc limit ${limit}`.pipe(withOrg(orgId))

    /**
     * Connections of every org whose snapshot is older than their refresh interval, that no replica
     * is scanning, and whose last scan did not fail within the interval (a failing one waits a turn).
     */
    const dueForRefresh = (defaultIntervalSeconds: number, limit: number) =>
      sql<{ org_id: OrgId; connection_id: string; name: string }>`select s.org_id, s.connection_id, c.name
        from schema_snapshots s join connections c on c.id = s.connection_id
        cross join lateral (select make_interval(secs => coalesce((c.settings->>'schema_refresh_interval')::int, ${defaultIntervalSeconds})) as every) i
        left join schema_scans sc on sc.connection_id = s.connection_id
        where s.scanned_at + i.every < now()
          and not coalesce(sc.state = 'running' and sc.started_at > now() - interval '1 hour', false)
          and not coalesce(sc.state = 'failed' and sc.finished_at > now() - i.every, false)
        order by s.scanned_at limit ${limit}`

    return { header, load, save, scanStarted, scanProgress, scanFinished, scanStatus, changes, dueForRefresh } as const
  })
}) {}
