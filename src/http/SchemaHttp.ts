import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "../api/Api"
import { CurrentPrincipal } from "../domain/Principal"
import { filterTables } from "../schema/SchemaFilter"
import { overviewOf, schemaText } from "../schema/SchemaFormats"
import { columnHitJson, tableHitJson } from "../schema/SchemaSearch"
import { SchemaChanges } from "../services/SchemaChanges"
import { SchemaContext } from "../services/SchemaContext"
import { SchemaExplorer } from "../services/SchemaExplorer"
import { SchemaRelations } from "../services/SchemaRelations"
import { Schemas, type SchemaView } from "../services/Schemas"
import { onChildQueries, onConnection } from "../gate/RequestState"

const DEFAULT_TEXT_TABLES = 50
const DEFAULT_SEARCH_LIMIT = 20

const sourceOf = (view: SchemaView) => ({
  connection: view.snapshot.connection,
  version: view.snapshot.version,
  scanned_at: view.snapshot.scanned_at
})

export const SchemaHttp = HttpApiBuilder.group(SluiceApi, "schema", (handlers) =>
  Effect.gen(function* () {
    const schemas = yield* Schemas
    const explorer = yield* SchemaExplorer
    const context = yield* SchemaContext
    const relations = yield* SchemaRelations
    const changes = yield* SchemaChanges
    const exploring = (name: string, session: string | undefined) =>
      Effect.map(onChildQueries(name, "schema_explore"), (sink) => ({ surface: "rest" as const, ...sink, session }))
    const viewOf = (name: string) =>
      onConnection(name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => schemas.view(p, name))))
    return handlers
      .handle("get", ({ path }) => Effect.map(viewOf(path.name), (view) => view.snapshot))
      .handle("grouped", ({ path }) =>
        Effect.map(viewOf(path.name), (view) => {
          const groups = new Map<string, Array<(typeof view.tables)[number]>>()
          for (const t of view.tables) groups.set(t.schema, [...(groups.get(t.schema) ?? []), t])
          return { ...sourceOf(view), schemas: [...groups.entries()].map(([schema, tables]) => ({ schema, tables })) }
        })
      )
      .handle("compact", ({ path, urlParams }) =>
        Effect.map(viewOf(path.name), (view) => ({
          ...sourceOf(view),
          ...schemaText(view.tables, "compact", urlParams.max_tables ?? DEFAULT_TEXT_TABLES)
        }))
      )
      .handle("ddl", ({ path, urlParams }) =>
        Effect.map(viewOf(path.name), (view) => ({
          ...sourceOf(view),
          ...schemaText(view.tables, "ddl", urlParams.max_tables ?? DEFAULT_TEXT_TABLES)
        }))
      )
      .handle("overview", ({ path }) =>
        Effect.map(viewOf(path.name), (view) => ({ ...sourceOf(view), db_type: view.snapshot.db_type, ...overviewOf(view.tables) }))
      )
      .handle("search", ({ path, urlParams }) =>
        Effect.map(viewOf(path.name), (view) => {
          const limit = urlParams.limit ?? DEFAULT_SEARCH_LIMIT
          const found = view.search().search(urlParams.q, { tables: limit, columns: limit }, view.visible)
          return {
            ...sourceOf(view),
            query: urlParams.q,
            tables: found.tables.map(tableHitJson),
            columns: found.columns.map(columnHitJson)
          }
        })
      )
      .handle("filter", ({ path, urlParams }) =>
        Effect.map(viewOf(path.name), (view) => {
          const matched = filterTables(view.tables, urlParams)
          return { ...sourceOf(view), total: matched.length, tables: matched.slice(0, urlParams.limit ?? 200) }
        })
      )
      .handle("link", ({ path, urlParams }) =>
        onConnection(path.name).pipe(
          Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => context.link(p, path.name, urlParams))),
          Effect.map(({ view, ...linked }) => ({ ...sourceOf(view), ...linked }))
        )
      )
      .handle("agentContext", ({ path, urlParams }) =>
        onConnection(path.name).pipe(
          Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => context.forAgent(p, path.name, urlParams))),
          Effect.map(({ view, ...bundle }) => ({ ...sourceOf(view), ...bundle }))
        )
      )
      .handle("relationships", ({ path, urlParams }) =>
        onConnection(path.name).pipe(
          Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => relations.relationships(p, path.name, urlParams))),
          Effect.map(({ schema, relationships }) => ({ ...sourceOf(schema), relationships }))
        )
      )
      .handle("joinPaths", ({ path, urlParams }) =>
        onConnection(path.name).pipe(
          Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => relations.joinPaths(p, path.name, urlParams))),
          Effect.map(({ schema, ...found }) => ({ ...sourceOf(schema), ...found }))
        )
      )
      .handle("samples", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const context = yield* exploring(path.name, urlParams.session)
          return yield* explorer.samples(yield* CurrentPrincipal, path.name, urlParams.table, urlParams.limit ?? 5, context)
        })
      )
      .handle("sampleValues", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const context = yield* exploring(path.name, urlParams.session)
          return yield* explorer.sampleValues(yield* CurrentPrincipal, path.name, urlParams.table, urlParams.limit ?? 5, context)
        })
      )
      .handle("explore", ({ path, payload }) =>
        Effect.gen(function* () {
          const context = yield* exploring(path.name, payload.session)
          return yield* explorer.explore(yield* CurrentPrincipal, { connection: path.name, ...payload, limit: payload.limit ?? 20 }, context)
        })
      )
      .handle("exploreColumns", ({ path, payload }) =>
        Effect.gen(function* () {
          const context = yield* exploring(path.name, payload.session)
          const { session: _session, ...request } = payload
          return yield* explorer.exploreColumns(yield* CurrentPrincipal, { connection: path.name, ...request }, context)
        })
      )
      .handle("refreshStatus", ({ path }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => schemas.status(p, path.name))))
      )
      .handle("diff", ({ path }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => changes.liveDiff(p, path.name))))
      )
      .handle("compare", ({ path }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => changes.compare(p, path.name, path.compare))))
      )
      .handle("diffHistory", ({ path, urlParams }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => changes.history(p, path.name, urlParams))))
      )
      .handle("changes", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => changes.history(p, null, urlParams)))
      .handle("refresh", ({ path }) =>
        onConnection(path.name).pipe(Effect.zipRight(Effect.flatMap(CurrentPrincipal, (p) => schemas.refresh(p, path.name))))
      )
      .handle("warmup", () => Effect.flatMap(CurrentPrincipal, schemas.warmup))
      .handle("cacheStats", () => Effect.map(CurrentPrincipal, schemas.cacheStats))
      .handle("cacheInvalidate", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => schemas.invalidate(p, payload.connection)))
  })
)
