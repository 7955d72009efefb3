import { Schema } from "effect"
import { noNul } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

/** The most a report's HTML may hold, in UTF-8 bytes (the specification's 5 MB): larger is refused with 413. */
export const REPORT_HTML_MAX_BYTES = 5 * 1024 * 1024
/** The most a report's data (JSON) may hold, in bytes of its JSON text. */
export const REPORT_DATA_MAX_BYTES = 5 * 1024 * 1024
/** The request body a report's routes take (its HTML and data as JSON, escaped), where others take 2 MiB. */
export const REPORT_REQUEST_MAX_BYTES = 24 * 1024 * 1024

export const ReportKind = Schema.Literal("report", "dashboard")
export type ReportKind = typeof ReportKind.Type

const Title = Schema.Trim.pipe(
  Schema.minLength(1, { message: () => "title is required" }),
  Schema.maxLength(200, { message: () => "title must be at most 200 characters" }),
  noNul("title")
)
// The request cap bounds it first; the service refuses HTML over REPORT_HTML_MAX_BYTES with 413.
const Html = Schema.String.pipe(noNul("html"), Schema.minLength(1, { message: () => "html is required" }))

export const CreateReport = Schema.Struct({
  title: Title,
  kind: Schema.optionalWith(ReportKind, { default: () => "report" as const }),
  html: Html,
  data: Schema.optionalWith(Schema.NullOr(Schema.Unknown), { default: () => null })
}).annotations(strict)
export type CreateReport = typeof CreateReport.Type

export const UpdateReport = Schema.Struct({
  title: Schema.optionalWith(Title, { exact: true }),
  kind: Schema.optionalWith(ReportKind, { exact: true }),
  html: Schema.optionalWith(Html, { exact: true }),
  data: Schema.optionalWith(Schema.NullOr(Schema.Unknown), { exact: true })
}).annotations(strict)
export type UpdateReport = typeof UpdateReport.Type

/** A report as listed: what it is, not what it holds. */
export const ReportSummary = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  kind: ReportKind,
  bytes: Schema.Int,
  view_count: Schema.Int,
  created_by: Schema.String,
  updated_by: Schema.String,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type ReportSummary = typeof ReportSummary.Type

/**
 * A report whole: its self-contained HTML document, shown to people only in a sandboxed frame on
 * an opaque origin (never served as a page of the gateway's or the web app's origin), and its data.
 */
export const Report = Schema.Struct({
  ...ReportSummary.fields,
  html: Schema.String,
  data: Schema.NullOr(Schema.Unknown)
})
export type Report = typeof Report.Type

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** A chat answer as a report: the question and the answer, as text (nothing in either becomes markup). */
export const answerReport = (question: string, answer: string) => ({
  title: (question.split("\n")[0] ?? "").trim().slice(0, 200) || "Answer",
  html: `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(question.slice(0, 200))}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}h1{font-size:1.3rem}.answer{white-space:pre-wrap}</style></head>
<body><h1>${escapeHtml(question)}</h1><div class="answer">${escapeHtml(answer)}</div></body></html>`
})
