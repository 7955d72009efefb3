import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import type { Report, ReportKind, ReportSummary } from "../domain/Report"
import { tenantScope } from "./Tenant"

const SUMMARY = "id, title, kind, bytes, view_count, created_by, updated_by, created_at, updated_at"
const WHOLE = `${SUMMARY}, html, data`

type StoredReport = Omit<Report, "data"> & { readonly data: string | null }
const withData = (row: StoredReport): Report => ({ ...row, data: row.data === null ? null : JSON.parse(row.data) })

/** Reports, per org. */
export class ReportsRepo extends Effect.Service<ReportsRepo>()("sluice/ReportsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)

    /** `data` is the report's data as JSON text, or null. */
    const insert = (orgId: OrgId, row: { id: string; title: string; kind: ReportKind; html: string; data: string | null; by: string }) =>
      sql<StoredReport>`insert into reports ${sql.insert({
        id: row.id,
        org_id: orgId,
        title: row.title,
        kind: row.kind,
        html: row.html,
        data: row.data,
        bytes: Buffer.byteLength(row.html),
        created_by: row.by,
        updated_by: row.by
      })} returning ${sql.unsafe(WHOLE)}`.pipe(
        Effect.map((rows) => withData(rows[0]!)),
        withOrg(orgId)
      )

    /** The whole report, counted as viewed; null when there is none. */
    const view = (orgId: OrgId, id: string) =>
      sql<StoredReport>`update reports set view_count = view_count + 1 where org_id = ${orgId} and id = ${id} returning ${sql.unsafe(WHOLE)}`.pipe(
        Effect.map((rows) => (rows[0] === undefined ? null : withData(rows[0]))),
        withOrg(orgId)
      )

    const update = (orgId: OrgId, id: string, change: { title?: string; kind?: ReportKind; html?: string; data?: string | null; by: string }) =>
      sql<StoredReport>`update reports set ${sql.update({
        ...(change.title === undefined ? {} : { title: change.title }),
        ...(change.kind === undefined ? {} : { kind: change.kind }),
        ...(change.html === undefined ? {} : { html: change.html, bytes: Buffer.byteLength(change.html) }),
        ...(change.data === undefined ? {} : { data: change.data }),
        updated_by: change.by
      })}, updated_at = date_trunc('milliseconds', now()) where org_id = ${orgId} and id = ${id} returning ${sql.unsafe(WHOLE)}`.pipe(
        Effect.map((rows) => (rows[0] === undefined ? null : withData(rows[0]))),
        withOrg(orgId)
      )

    const remove = (orgId: OrgId, id: string) =>
      sql<{ id: string }>`delete from reports where org_id = ${orgId} and id = ${id} returning id`.pipe(
        Effect.map((rows) => rows.length > 0),
        withOrg(orgId)
      )

    /** A page of reports, most recently updated first, after the (updated_at, id) of the last one seen. */
    const page = (orgId: OrgId, before: readonly [string, string] | null, limit: number) =>
      sql<ReportSummary>`select ${sql.unsafe(SUMMARY)} from reports where org_id = ${orgId}
        ${before === null ? sql`` : sql`and (updated_at, id) < (${before[0]}::timestamptz, ${before[1]})`}
        order by updated_at desc, id desc limit ${limit}`.pipe(withOrg(orgId))

    return { insert, view, update, remove, page } as const
  })
}) {}
