import { Effect } from "effect"
import type { Principal } from "../domain/Principal"
import { qualifiedName } from "../domain/SchemaSnapshot"
import { findTable } from "../schema/SchemaFilter"
import { joinPaths, relationshipsOf } from "../schema/Relationships"
import { Schemas } from "./Schemas"

/** How a connection's tables relate: their keys, declared and inferred, and the ways to join two of them. */
export class SchemaRelations extends Effect.Service<SchemaRelations>()("sluice/SchemaRelations", {
  effect: Effect.gen(function* () {
    const schemas = yield* Schemas

    /** Declared keys and, unless turned off, inferred ones; optionally only those touching one table. */
    const relationships = Effect.fn("SchemaRelations.relationships")(function* (
      principal: Principal,
      name: string,
      params: { readonly include_inferred?: boolean | undefined; readonly table?: string | undefined }
    ) {
      const schema = yield* schemas.view(principal, name)
      const all = relationshipsOf(schema.tables, params.include_inferred ?? true)
      if (params.table === undefined) return { schema, relationships: all }
      const table = qualifiedName(yield* findTable(schema.tables, params.table, name))
      return { schema, relationships: all.filter((r) => r.from_table === table || r.to_table === table) }
    })

    /** The shortest ways to join two tables, with their JOIN clauses. */
    const paths = Effect.fn("SchemaRelations.joinPaths")(function* (
      principal: Principal,
      name: string,
      params: { readonly from: string; readonly to: string; readonly max_hops?: number | undefined; readonly include_inferred?: boolean | undefined }
    ) {
      const schema = yield* schemas.view(principal, name)
      const from = qualifiedName(yield* findTable(schema.tables, params.from, name))
      const to = qualifiedName(yield* findTable(schema.tables, params.to, name))
      return { schema, from, to, paths: joinPaths(relationshipsOf(schema.tables, params.include_inferred ?? true), from, to, params.max_hops ?? 4) }
    })

    return { relationships, joinPaths: paths } as const
  }),
  dependencies: [Schemas.Default]
}) {}
