import { Effect, Schema } from "effect"
import { decodeCursor, pageOf } from "../domain/Pagination"
import type { Principal } from "../domain/Principal"
import { SchemaRepo } from "../repos/SchemaRepo"
import { diffSchemas, isEmptyDiff, visiblePart } from "../schema/SchemaDiff"
import { Connections } from "./Connections"
import { Schemas } from "./Schemas"

const ChangeCursor = Schema.Tuple(Schema.String)

/** How schemas differ: now against the stored snapshot, one connection against another, and what scans recorded. */
export class SchemaChanges extends Effect.Service<SchemaChanges>()("sluice/SchemaChanges", {
  effect: Effect.gen(function* () {
    const schemas = yield* Schemas
    const repo = yield* SchemaRepo
    const connections = yield* Connections

    /** The live catalog against the stored snapshot, storing nothing. */
    const liveDiff = Effect.fn("SchemaChanges.liveDiff")(function* (principal: Principal, name: string) {
      const stored = yield* schemas.view(principal, name)
      const live = yield* schemas.readLive(yield* connections.target(principal, name))
      const diff = diffSchemas(stored.scanned, live)
      return { connection: name, version: stored.snapshot.version, scanned_at: stored.snapshot.scanned_at, checked_at: new Date(), changed: !isEmptyDiff(diff), diff }
    })

    /** What `other` has that `name` has not, and the reverse: two connections' latest snapshots side by side. */
    const compare = Effect.fn("SchemaChanges.compare")(function* (principal: Principal, name: string, other: string) {
      const base = yield* schemas.view(principal, name)
      const against = yield* schemas.view(principal, other)
      const diff = diffSchemas(base.scanned, against.scanned)
      return { connection: name, compare: other, version: base.snapshot.version, compare_version: against.snapshot.version, changed: !isEmptyDiff(diff), diff }
    })

    /** Recorded changes, newest first: one connection's, or the whole org's; tables the caller may not see are left out. */
    const history = Effect.fn("SchemaChanges.history")(function* (
      principal: Principal,
      name: string | null,
      params: { readonly limit?: number | undefined; readonly cursor?: string | undefined }
    ) {
      const limit = params.limit ?? 50
      const before = params.cursor === undefined ? null : (yield* decodeCursor(params.cursor, ChangeCursor))[0]
      const only = name === null ? null : (yield* connections.target(principal, name)).connectionId
      const rows = yield* repo.changes(principal.orgId, only, limit + 1, before)
      const visible = new Map<string, (qualified: string) => boolean>()
      for (const connection of new Set(rows.map((r) => r.connection))) {
        const target = yield* Effect.option(connections.target(principal, connection))
        visible.set(connection, target._tag === "Some" ? yield* schemas.visibleNames(target.value) : () => false)
      }
      const page = pageOf(rows, limit, (last) => [last.id])
      return { ...page, items: page.items.map((row) => ({ ...row, diff: visiblePart(row.diff, visible.get(row.connection)!) })) }
    })

    return { liveDiff, compare, history } as const
  }),
  dependencies: [SchemaRepo.Default, Connections.Default, Schemas.Default]
}) {}
