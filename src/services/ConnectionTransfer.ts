import { Effect, Either } from "effect"
import type { ConnectionInput } from "../domain/Connection"
import { splitSecrets } from "../domain/ConnectionSecrets"
import { EXPORT_FORMAT } from "../domain/ConnectionTransfer"
import { Conflict, Forbidden, InvalidRequest } from "../domain/Errors"
import type { PiiRule } from "../domain/Pii"
import type { Principal } from "../domain/Principal"
import { Connections } from "./Connections"

const PAGE = 500

/** Connections out of one org and into another (or the same): a backup, a migration, a copy to staging. */
export class ConnectionTransfer extends Effect.Service<ConnectionTransfer>()("sluice/ConnectionTransfer", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections

    const allNames = (principal: Principal) =>
      Effect.gen(function* () {
        const names: Array<string> = []
        let cursor: string | undefined
        do {
          const page = yield* connections.list(principal, { limit: PAGE, cursor })
          names.push(...page.items.map((c) => c.name))
          cursor = page.next_cursor ?? undefined
        } while (cursor !== undefined)
        return names
      })

    const exportAll = Effect.fn("ConnectionTransfer.export")(function* (
      principal: Principal,
      request: { names?: ReadonlyArray<string> | undefined; include_secrets?: boolean | undefined; confirm?: boolean | undefined }
    ) {
      const withSecrets = request.include_secrets === true
      if (withSecrets && !principal.scopes.includes("admin")) {
        return yield* new Forbidden({ message: "Exporting secrets needs a key with the admin scope" })
      }
      if (withSecrets && request.confirm !== true) {
        return yield* new InvalidRequest({ message: "include_secrets: the export will hold passwords in plain text; send confirm: true to proceed" })
      }
      const names = request.names ?? (yield* allNames(principal))
      const targets = yield* Effect.forEach(names, (name) => connections.target(principal, name))
      const exported = targets.map((target) => (withSecrets ? target.connection : splitSecrets(target.connection).settings))
      const piiRules = Object.fromEntries(targets.filter((t) => t.pii.rules.length > 0).map((t) => [t.connection.name, t.pii.rules]))
      return {
        format: EXPORT_FORMAT,
        exported_at: new Date(),
        include_secrets: withSecrets,
        connections: exported as Array<Record<string, unknown>>,
        pii_rules: piiRules
      } as const
    })

    /** Checks every name first, so a conflict or a read-only target fails the import before anything changes. */
    const importAll = Effect.fn("ConnectionTransfer.import")(function* (
      principal: Principal,
      request: {
        connections: ReadonlyArray<ConnectionInput>
        on_conflict?: "fail" | "skip" | "replace" | undefined
        pii_rules?: Readonly<Record<string, ReadonlyArray<PiiRule>>> | undefined
      }
    ) {
      const onConflict = request.on_conflict ?? "fail"
      const carryRules = (name: string) => {
        const rules = request.pii_rules?.[name]
        return rules === undefined ? Effect.void : Effect.asVoid(connections.setPiiRules(principal, name, rules))
      }
      const seen = new Set<string>()
      for (const input of request.connections) {
        if (seen.has(input.name)) return yield* new InvalidRequest({ message: `connections: "${input.name}" appears twice` })
        seen.add(input.name)
        yield* connections.checkPlacement(input)
      }
      const existing = yield* Effect.forEach(request.connections, (input) =>
        Effect.either(connections.get(principal, input.name)).pipe(Effect.map((found) => ({ input, found: Either.getRight(found) })))
      )
      for (const { input, found } of existing) {
        if (found._tag === "None") continue
        if (onConflict === "fail") {
          return yield* new Conflict({ message: `A connection named "${input.name}" already exists; nothing was imported (use on_conflict: skip or replace)` })
        }
        if (onConflict === "replace" && found.value.read_only) {
          return yield* new Forbidden({ message: `Connection "${input.name}" is configured by the environment and cannot be replaced; nothing was imported` })
        }
      }
      for (const name of Object.keys(request.pii_rules ?? {})) {
        if (!seen.has(name)) return yield* new InvalidRequest({ message: `pii_rules: "${name}" is not among the imported connections` })
      }
      const result = { created: [] as Array<string>, replaced: [] as Array<string>, skipped: [] as Array<string> }
      for (const { input, found } of existing) {
        if (found._tag === "None") {
          yield* connections.create(principal, input)
          yield* carryRules(input.name)
          result.created.push(input.name)
        } else if (onConflict === "skip") {
          result.skipped.push(input.name)
        } else {
          yield* connections.update(principal, input.name, input)
          yield* carryRules(input.name)
          result.replaced.push(input.name)
        }
      }
      return result
    })

    return { exportAll, importAll } as const
  }),
  dependencies: [Connections.Default]
}) {}
