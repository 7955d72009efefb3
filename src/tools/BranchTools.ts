import { Effect, Schema } from "effect"
import { BranchStatements } from "../services/BranchStatements"
import { tableLines, untrusted } from "./ResultText"
import { defineTool } from "./ToolDefinition"

const BranchSqlInput = Schema.Struct({
  sql: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(1_000_000)).annotations({
    description: "PostgreSQL to run in your branch: CREATE TABLE … AS, CREATE VIEW, INSERT, UPDATE, DELETE, DROP of what is in it, and SELECT; several statements may be separated by ;"
  })
}).annotations({ parseOptions: { onExcessProperty: "error" } })

/** Writing in a database branch: offered only to a key that may write in one (an evaluation write task's), as the branch's own role. */
export const branchTools = Effect.gen(function* () {
  const statements = yield* BranchStatements

  const branchSql = defineTool({
    name: "branch_sql",
    scope: "query",
    title: "Run SQL in your database branch",
    description:
      "Runs SQL in the database branch your task may change (a governed copy of the warehouse: blocked tables are absent, PII is masked), as the branch's own role. Build the tables and views the task asks for here; nothing outside the branch is reachable. Returns the last statement's rows, or what it changed.",
    input: BranchSqlInput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    offeredTo: (principal) => principal.branch !== undefined,
    run: (args, call) =>
      Effect.map(statements.run(call.principal, args.sql), (result) => {
        if (result.columns.length === 0) return { text: `${result.command} done${result.row_count === null ? "" : `: ${result.row_count} row${result.row_count === 1 ? "" : "s"}`}.` }
        const { lines, shown } = tableLines(result.columns, result.rows)
        const notes = `${result.rows.length}${result.truncated ? "+" : ""} rows${shown < result.rows.length ? `; the text shows ${shown}` : ""}.`
        return { text: [untrusted("Rows returned by your branch.", lines.join("\n")), notes].join("\n") }
      })
  })

  return [branchSql]
})
