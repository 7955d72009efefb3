import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { NotFound } from "../domain/Errors"
import { ConnectionId, type OrgId, WatchId } from "../domain/Ids"
import { type Principal, principalLabel } from "../domain/Principal"
import { onQualifiedName } from "../domain/SchemaSnapshot"
import type { WatchInput } from "../domain/SchemaViews"
import { SchemaWatchesRepo, type WatchRow } from "../repos/SchemaWatchesRepo"
import { globFilter } from "../schema/CatalogScan"
import { isEmptyDiff, visiblePart } from "../schema/SchemaDiff"
import { Connections } from "./Connections"
import { Schemas } from "./Schemas"

const DEFAULT_INTERVAL_SECONDS = 3_600
const RECENT_EVENTS = 20

const shown = ({ org_id: _org, connection_id: _id, ...watch }: WatchRow) => watch

/**
 * Watches on a connection (or some of its tables): each run scans the connection and records, as
 * the watch's events, the recorded changes since its last run that touch what it watches.
 */
export class SchemaWatches extends Effect.Service<SchemaWatches>()("sluice/SchemaWatches", {
  effect: Effect.gen(function* () {
    const repo = yield* SchemaWatchesRepo
    const schemas = yield* Schemas
    const connections = yield* Connections

    const found = (orgId: OrgId, id: WatchId) =>
      repo.find(orgId, id).pipe(
        Effect.filterOrFail(
          (row): row is WatchRow => row !== null,
          () => new NotFound({ message: `No schema watch "${id}" in this organization` })
        )
      )

    const list = Effect.fn("SchemaWatches.list")(function* (principal: Principal) {
      return { items: (yield* repo.list(principal.orgId)).map(shown) }
    })

    const create = Effect.fn("SchemaWatches.create")(function* (principal: Principal, input: typeof WatchInput.Type) {
      const target = yield* connections.target(principal, input.connection)
      const id = WatchId.make(`watch_${randomUUID().replaceAll("-", "")}`)
      yield* repo
        .insert({
          id,
          org_id: principal.orgId,
          connection_id: ConnectionId.make(target.connectionId),
          name: input.name ?? `${input.connection}${input.tables?.length ? `: ${input.tables.join(", ")}` : ""}`.slice(0, 200),
          tables: input.tables ?? [],
          interval_seconds: input.interval_seconds ?? DEFAULT_INTERVAL_SECONDS,
          created_by: principalLabel(principal)
        })
      return shown(yield* found(principal.orgId, id))
    })

    const get = Effect.fn("SchemaWatches.get")(function* (principal: Principal, id: string) {
      const watch = yield* found(principal.orgId, WatchId.make(id))
      return { ...shown(watch), events: yield* repo.events(principal.orgId, watch.id, RECENT_EVENTS) }
    })

    const remove = Effect.fn("SchemaWatches.remove")(function* (principal: Principal, id: string) {
      if (!(yield* repo.remove(principal.orgId, WatchId.make(id)))) return yield* new NotFound({ message: `No schema watch "${id}" in this organization` })
    })

    /** One run: scan, keep the changes since the last run that touch the watched tables, remember the version. */
    const runIn = (orgId: OrgId, id: WatchId) =>
      Effect.gen(function* () {
        const watch = yield* found(orgId, id)
        const outcome = yield* Effect.either(schemas.scanAndChangesSince(orgId, watch.connection, watch.last_version))
        if (outcome._tag === "Left") {
          yield* repo.recordRun(orgId, id, { version: null, error: outcome.left.message, events: [] })
          return { watch: shown(yield* found(orgId, id)), new_events: [] }
        }
        const watched = onQualifiedName(globFilter(watch.tables, undefined))
        const events = outcome.right.changes
          .map((change) => ({ from_version: change.from_version, to_version: change.to_version, diff: visiblePart(change.diff, watched) }))
          .filter((event) => !isEmptyDiff(event.diff))
        yield* repo.recordRun(orgId, id, { version: outcome.right.version, error: null, events })
        return { watch: shown(yield* found(orgId, id)), new_events: events.length === 0 ? [] : [...(yield* repo.events(orgId, id, events.length))].reverse() }
      })

    const run = Effect.fn("SchemaWatches.run")(function* (principal: Principal, id: string) {
      return yield* runIn(principal.orgId, WatchId.make(id))
    })

    return { list, create, get, remove, run, runIn, due: repo.due } as const
  }),
  dependencies: [SchemaWatchesRepo.Default, Connections.Default, Schemas.Default]
}) {}
