import { Effect, Schema } from "effect"
import { CreateReport } from "../domain/Report"
import { Reports } from "../services/Reports"
import { defineTool, type ToolDefinition } from "./ToolDefinition"

const PublishInput = Schema.Struct({
  title: CreateReport.fields.title.annotations({ description: "The report's title, 1 to 200 characters" }),
  kind: Schema.optionalWith(Schema.Literal("report", "dashboard").annotations({ description: "report (default) or dashboard" }), { exact: true }),
  html: CreateReport.fields.html.annotations({
    description: "A self-contained static HTML document (inline CSS, SVG and data: images; scripts do not run and nothing it loads from elsewhere is shown); an MCP request carries at most 2 MiB, POST /api/reports up to 5 MiB"
  }),
  data: Schema.optionalWith(Schema.Unknown.annotations({ description: "The data behind it, as JSON" }), { exact: true })
}).annotations({ parseOptions: { onExcessProperty: "error" } })

/** Publishing a report, as an admin may over REST. */
export const reportTools = Effect.gen(function* () {
  const reports = yield* Reports

  const publishReport = defineTool({
    name: "publish_report",
    scope: "admin",
    title: "Publish a report",
    description:
      "Publishes an HTML report or dashboard for the organization to see in Sluice's Reports page (shown in a sandboxed frame as a static document: no script runs and nothing loads from elsewhere, so use inline CSS, SVG and data: images). Returns its id.",
    input: PublishInput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: (args, call) =>
      Effect.map(reports.create(call.principal, { title: args.title, kind: args.kind ?? "report", html: args.html, data: args.data ?? null }), (report) => ({
        text: JSON.stringify({ id: report.id, title: report.title, kind: report.kind, bytes: report.bytes })
      }))
  })

  const tools: ReadonlyArray<ToolDefinition> = [publishReport]
  return tools
})
