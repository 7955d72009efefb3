import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { OrgId, ReportId } from "../domain/Ids"
import { ReportKind, ReportSummary } from "../domain/Report"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

const SummaryRow = Schema.Struct({ ...ReportSummary.fields, id: ReportId, created_at: Schema.DateFromSelf, updated_at: Schema.DateFromSelf })

/** `data` is kept as JSON text. */
const ReportRow = Schema.Struct({ ...SummaryRow.fields, html: Schema.String, data: Schema.NullOr(Schema.parseJson()) })

const NewReport = Schema.Struct({ id: ReportId, title: Schema.String, kind: ReportKind, html: Schema.String, data: Schema.NullOr(Schema.String), by: Schema.String })

const ReportChange = Schema.Struct({
  title: Schema.optional(Schema.String),
  kind: Schema.optional(ReportKind),
  html: Schema.optional(Schema.String),
  data: Schema.optional(Schema.NullOr(Schema.String)),
  by: Schema.String
})

const ById = Schema.Struct({ orgId: OrgId, id: ReportId })

const SUMMARY = "id, title, kind, bytes, view_count, created_by, updated_by, created_at, updated_at"
const WHOLE = `${SUMMARY}, html, data`

/** Reports, per org. */
export class ReportsRepo extends Effect.Service<ReportsRepo>()("sluice/ReportsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("reports store")

    const insertReport = SqlSchema.single({
      Request: Schema.Struct({ orgId: OrgId, row: NewReport }),
      Result: ReportRow,
      execute: ({ orgId, row }) =>
        sql`insert into reports ${sql.insert({
          id: row.id,
          org_id: orgId,
          title: row.title,
          kind: row.kind,
          html: row.html,
          data: row.data,
          bytes: Buffer.byteLength(row.html),
          created_by: row.by,
          updated_by: row.by
        })} returning ${sql.unsafe(WHOLE)}`
    })
    /** `data` is the report's data as JSON text, or null. */
    const insert = Effect.fn("ReportsRepo.insert")((orgId: OrgId, row: typeof NewReport.Type) => insertReport({ orgId, row }).pipe(withOrg(orgId)), failures)

    const viewReport = SqlSchema.findOne({
      Request: ById,
      Result: ReportRow,
      execute: ({ orgId, id }) => sql`update reports set view_count = view_count + 1 where org_id = ${orgId} and id = ${id} returning ${sql.unsafe(WHOLE)}`
    })
    /** The whole report, counted as viewed; null when there is none. */
    const view = Effect.fn("ReportsRepo.view")((orgId: OrgId, id: ReportId) => viewReport({ orgId, id }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)), failures)

    const updateReport = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: OrgId, id: ReportId, change: ReportChange }),
      Result: ReportRow,
      execute: ({ orgId, id, change }) =>
        sql`update reports set ${sql.update({
          ...(change.title === undefined ? {} : { title: change.title }),
          ...(change.kind === undefined ? {} : { kind: change.kind }),
          ...(change.html === undefined ? {} : { html: change.html, bytes: Buffer.byteLength(change.html) }),
          ...(change.data === undefined ? {} : { data: change.data }),
          updated_by: change.by
        })}, updated_at = date_trunc('milliseconds', now()) where org_id = ${orgId} and id = ${id} returning ${sql.unsafe(WHOLE)}`
    })
    const update = Effect.fn("ReportsRepo.update")(
      (orgId: OrgId, id: ReportId, change: typeof ReportChange.Type) => updateReport({ orgId, id, change }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const removeReport = SqlSchema.findOne({
      Request: ById,
      Result: Schema.Struct({ id: ReportId }),
      execute: ({ orgId, id }) => sql`delete from reports where org_id = ${orgId} and id = ${id} returning id`
    })
    const remove = Effect.fn("ReportsRepo.remove")((orgId: OrgId, id: ReportId) => removeReport({ orgId, id }).pipe(Effect.map(Option.isSome), withOrg(orgId)), failures)

    const pageOfReports = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: OrgId, before: Schema.NullOr(Schema.Tuple(Schema.String, Schema.String)), limit: Schema.Number }),
      Result: SummaryRow,
      execute: ({ orgId, before, limit }) =>
        sql`select ${sql.unsafe(SUMMARY)} from reports where org_id = ${orgId}
          ${before === null ? sql`` : sql`and (updated_at, id) < (${before[0]}::timestamptz, ${before[1]})`}
          order by updated_at desc, id desc limit ${limit}`
    })
    /** A page of reports, most recently updated first, after the (updated_at, id) of the last one seen. */
    const page = Effect.fn("ReportsRepo.page")(
      (orgId: OrgId, before: readonly [string, string] | null, limit: number) => pageOfReports({ orgId, before, limit }).pipe(withOrg(orgId)),
      failures
    )

    return { insert, view, update, remove, page } as const
  })
}) {}
