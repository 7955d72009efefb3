import { Effect } from "effect"
import type { Principal } from "../domain/Principal"
import { qualifiedName } from "../domain/SchemaSnapshot"
import { byImportance } from "../schema/SchemaFormats"
import { agentContext, type LinkFormat, linkTables, renderLinked } from "../schema/SchemaLink"
import { Schemas } from "./Schemas"

const DEFAULT_LINK_TABLES = 20
const DEFAULT_LINK_TOKENS = 4_000
const DEFAULT_CONTEXT_TOKENS = 8_000
const DEFAULT_FULL_DDL_TABLES = 8

/** Schema context sized for an agent: the tables a question needs, or the best of the schema, within a token budget. */
export class SchemaContext extends Effect.Service<SchemaContext>()("sluice/SchemaContext", {
  effect: Effect.gen(function* () {
    const schemas = yield* Schemas

    /** The tables relevant to a question, rendered in one format and pruned to a token budget. */
    const link = Effect.fn("SchemaContext.link")(function* (
      principal: Principal,
      name: string,
      params: { readonly question: string; readonly format?: LinkFormat | undefined; readonly max_tables?: number | undefined; readonly max_tokens?: number | undefined }
    ) {
      const view = yield* schemas.view(principal, name)
      const format = params.format ?? "ddl"
      const linked = linkTables(view.tables, view.search(), view.visible, params.question, params.max_tables ?? DEFAULT_LINK_TABLES)
      const rendered = renderLinked(linked, format, params.max_tokens ?? DEFAULT_LINK_TOKENS)
      return {
        view,
        question: params.question,
        format,
        tables: rendered.kept.map((l) => ({ table: qualifiedName(l.table), score: Math.round(l.score * 1000) / 1000, via: l.via })),
        linked: rendered.kept.length,
        total_tables: view.tables.length,
        text: rendered.text,
        token_estimate: rendered.token_estimate
      }
    })

    /** One prompt-ready block: DDL of the most relevant tables, compact lines for more, and how they join. */
    const forAgent = Effect.fn("SchemaContext.forAgent")(function* (
      principal: Principal,
      name: string,
      params: { readonly question?: string | undefined; readonly max_tokens?: number | undefined; readonly max_tables?: number | undefined; readonly full_ddl_tables?: number | undefined }
    ) {
      const view = yield* schemas.view(principal, name)
      const maxTables = params.max_tables ?? 100
      const ranked =
        params.question === undefined
          ? byImportance(view.tables).slice(0, maxTables)
          : linkTables(view.tables, view.search(), view.visible, params.question, maxTables).map((l) => l.table)
      const header = [
        `-- ${view.snapshot.connection}: ${view.snapshot.db_type} SQL, schema version ${view.snapshot.version} (${view.snapshot.table_count} tables)`,
        ...(params.question === undefined ? [] : [`-- Tables for: ${params.question.replace(/\s+/g, " ")}`])
      ].join("\n")
      const context = agentContext(view.tables, ranked, {
        header,
        maxTokens: params.max_tokens ?? DEFAULT_CONTEXT_TOKENS,
        fullDdlTables: params.full_ddl_tables ?? DEFAULT_FULL_DDL_TABLES
      })
      return { view, question: params.question ?? null, ...context }
    })

    return { link, forAgent } as const
  }),
  dependencies: [Schemas.Default]
}) {}
