import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { InvalidRequest, NotFound, PayloadTooLarge } from "../domain/Errors"
import { ReportId } from "../domain/Ids"
import { decodeCursor, pageOf, TimeAndIdCursor } from "../domain/Pagination"
import { type Principal, principalLabel } from "../domain/Principal"
import { type CreateReport, REPORT_DATA_MAX_BYTES, REPORT_HTML_MAX_BYTES, type UpdateReport } from "../domain/Report"
import { ReportsRepo } from "../repos/ReportsRepo"

const DEFAULT_LIMIT = 50

const notFound = (id: string) => new NotFound({ message: `There is no report ${id}` })

/** The HTML and data fit their limits (413 otherwise); the data as the JSON text kept (undefined: unchanged). */
const fitted = (change: { readonly html?: string | undefined; readonly data?: unknown }) =>
  Effect.gen(function* () {
    const htmlBytes = change.html === undefined ? 0 : Buffer.byteLength(change.html)
    if (htmlBytes > REPORT_HTML_MAX_BYTES) return yield* new PayloadTooLarge({ message: `html is ${htmlBytes} bytes; a report holds at most ${REPORT_HTML_MAX_BYTES}` })
    if (change.data === undefined || change.data === null) return change.data
    const data = change.data
    // JSON nested thousands deep overflows the stack that writes it: a refusal, not a failure.
    const text = yield* Effect.try({ try: () => JSON.stringify(data), catch: () => new InvalidRequest({ message: "data is nested too deeply" }) })
    const dataBytes = Buffer.byteLength(text)
    if (dataBytes > REPORT_DATA_MAX_BYTES) return yield* new PayloadTooLarge({ message: `data is ${dataBytes} bytes as JSON; a report holds at most ${REPORT_DATA_MAX_BYTES}` })
    return text
  })

/** Reports and dashboards the organization shares: self-contained HTML documents with their data. */
export class Reports extends Effect.Service<Reports>()("sluice/Reports", {
  effect: Effect.gen(function* () {
    const repo = yield* ReportsRepo

    const create = Effect.fn("Reports.create")(function* (principal: Principal, input: CreateReport) {
      const data = yield* fitted(input)
      return yield* repo.insert(principal.orgId, {
        id: ReportId.make(`rep_${randomUUID().replaceAll("-", "")}`),
        title: input.title,
        kind: input.kind,
        html: input.html,
        data: data ?? null,
        by: principalLabel(principal)
      })
    })

    const get = Effect.fn("Reports.get")(function* (principal: Principal, id: string) {
      return (yield* repo.view(principal.orgId, ReportId.make(id))) ?? (yield* notFound(id))
    })

    const update = Effect.fn("Reports.update")(function* (principal: Principal, id: string, change: UpdateReport) {
      const data = yield* fitted(change)
      const { data: _given, ...rest } = change
      return (yield* repo.update(principal.orgId, ReportId.make(id), { ...rest, ...(data === undefined ? {} : { data }), by: principalLabel(principal) })) ?? (yield* notFound(id))
    })

    const remove = Effect.fn("Reports.remove")(function* (principal: Principal, id: string) {
      if (!(yield* repo.remove(principal.orgId, ReportId.make(id)))) return yield* notFound(id)
      return { id, deleted: true }
    })

    const list = Effect.fn("Reports.list")(function* (principal: Principal, params: { readonly limit?: number | undefined; readonly cursor?: string | undefined }) {
      const limit = params.limit ?? DEFAULT_LIMIT
      const before = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, TimeAndIdCursor)
      const rows = yield* repo.page(principal.orgId, before, limit + 1)
      return pageOf(rows, limit, (last) => [last.updated_at.toISOString(), last.id])
    })

    return { create, get, update, remove, list } as const
  }),
  dependencies: [ReportsRepo.Default]
}) {}
