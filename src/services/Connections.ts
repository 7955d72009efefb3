import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Either, Option, Schema } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { CredentialCipher } from "../../layers/CredentialCipher"
import { ConnectorError } from "../../layers/connectors/Connector"
import { ConnectorPools, type PoolTarget } from "../../layers/connectors/ConnectorPools"
import { hostKeyChanged } from "../../layers/connectors/SshTunnel"
import { Connection, type ConnectionInput, type DbType } from "../domain/Connection"
import type { PiiPolicy, PiiRule } from "../domain/Pii"
import { carryOverSecrets, joinSecrets, type Secrets, splitSecrets } from "../domain/ConnectionSecrets"
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../domain/Errors"
import { ConnectionId, LOCAL_ORG, type OrgId } from "../domain/Ids"
import { decodeCursor, pageOf } from "../domain/Pagination"
import { mayUseConnection, type Principal } from "../domain/Principal"
import { ResultCache } from "../governance/ResultCache"
import { type ConnectionRow, ConnectionsRepo, type NewConnectionRow } from "../repos/ConnectionsRepo"
import { DbBranchesRepo } from "../repos/DbBranchesRepo"
import { makeLookupCache } from "./LookupCache"

const Cursor = Schema.Tuple(Schema.String)

const LOCAL_FILE_TYPES: ReadonlySet<DbType> = new Set(["duckdb", "sqlite"])

// A query needs its connection's target on every call; other replicas see an edit within this.
const TARGET_CACHE_TTL_MS = 1000
const targetKey = (orgId: OrgId, name: string) => `${orgId}\u0000${name}`

/** The path with every symlink resolved; a file not there yet is placed in its parent's real directory. */
const realPath = (file: string): string | null => {
  const real = Option.liftThrowable(() => fs.realpathSync(file))()
  if (Option.isSome(real)) return real.value
  // A dangling symlink: opening it would create its target wherever it points.
  if (fs.lstatSync(file, { throwIfNoEntry: false }) !== undefined) return null
  const parent = path.dirname(file)
  if (parent === file) return null
  const realParent = realPath(parent)
  return realParent === null ? null : path.join(realParent, path.basename(file))
}

const isSecretSet = (row: ConnectionRow, secretPath: string) => row.secret_paths.includes(secretPath)

/** The API's view of a stored connection: every field but the secrets, which show only as `*_set`. */
export const toConnection = (row: ConnectionRow): Connection => {
  const settings = row.settings as Record<string, any>
  const { tls, ssh_tunnel, branching, name: _name, db_type: _type, description: _d, tags: _t, ...rest } = settings
  return new Connection({
    ...rest,
    name: row.name,
    db_type: row.db_type,
    description: row.description,
    tags: row.tags,
    ...(tls === undefined ? {} : { tls: { ...tls, client_key_pem_set: isSecretSet(row, "tls.client_key_pem") } }),
    ...(branching === undefined
      ? {}
      : {
          branching: {
            service: branching.service,
            project_id: branching.project_id,
            parent_branch_id: branching.parent_branch_id ?? null,
            api_key_set: isSecretSet(row, "branching.api_key")
          }
        }),
    ...(ssh_tunnel === undefined
      ? {}
      : {
          ssh_tunnel: {
            host: ssh_tunnel.host,
            port: ssh_tunnel.port ?? 22,
            username: ssh_tunnel.username,
            private_key_set: isSecretSet(row, "ssh_tunnel.private_key"),
            passphrase_set: isSecretSet(row, "ssh_tunnel.passphrase"),
            password_set: isSecretSet(row, "ssh_tunnel.password"),
            host_key_fingerprint: ssh_tunnel.host_key_fingerprint ?? row.host_key_fingerprint
          }
        }),
    password_set: isSecretSet(row, "password"),
    access_token_set: isSecretSet(row, "access_token"),
    credentials_json_set: isSecretSet(row, "credentials_json"),
    source: row.source,
    read_only: row.source === "env",
    created_at: row.created_at,
    updated_at: row.updated_at
  })
}

const credentialLost = () =>
  new Conflict({ message: "This connection's stored credentials cannot be decrypted with the configured keys; enter them again" })

export class Connections extends Effect.Service<Connections>()("sluice/Connections", {
  scoped: Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* ConnectionsRepo
    const branchesRepo = yield* DbBranchesRepo
    const cipher = yield* CredentialCipher
    const pools = yield* ConnectorPools
    const results = yield* ResultCache
    const fileRoots = [config.dataDir, ...config.localDbDirs.map((dir) => path.resolve(dir))]

    /** Local database files: self-hosted only, and only under SP_DATA_DIR or SP_LOCAL_DB_DIRS. */
    const placeLocalFile = (input: ConnectionInput): Effect.Effect<ConnectionInput, InvalidRequest> => {
      if (!LOCAL_FILE_TYPES.has(input.db_type)) return Effect.succeed(input)
      if (!config.selfHosted) {
        return Effect.fail(new InvalidRequest({ message: `db_type ${input.db_type} reads a local file, which cloud deployments do not allow` }))
      }
      const database = (input as { database: string }).database
      // Links are followed before the check, so a link inside an allowed directory cannot point outside it.
      const resolved = realPath(path.resolve(config.dataDir, database))
      const roots = fileRoots.map((root) => realPath(root) ?? root)
      const inside = resolved !== null && roots.some((root) => resolved === root || resolved.startsWith(root + path.sep))
      if (!inside) {
        return Effect.fail(
          new InvalidRequest({ message: "database: the file must be inside the gateway's data directory or a directory listed in SP_LOCAL_DB_DIRS" })
        )
      }
      return Effect.succeed({ ...input, database: resolved } as ConnectionInput)
    }

    const sealSecrets = (orgId: OrgId, id: string, secrets: Secrets) =>
      Object.keys(secrets).length === 0 ? null : cipher.encrypt(JSON.stringify(secrets), { orgId, connectionId: id })

    const rowFields = (orgId: OrgId, id: string, input: ConnectionInput, secrets: Secrets) => {
      const { settings } = splitSecrets(input)
      return {
        name: input.name,
        db_type: input.db_type,
        description: input.description ?? null,
        tags: input.tags ?? [],
        settings,
        secrets: sealSecrets(orgId, id, secrets),
        secret_paths: Object.keys(secrets).sort()
      }
    }

    const decrypt = (row: ConnectionRow & { secrets: string }) =>
      cipher.decrypt(row.secrets, { orgId: row.org_id, connectionId: row.id }).pipe(Effect.mapError(credentialLost))

    /** Writes secrets read under an old key back under the current one; a concurrent edit wins. */
    const reseal = (row: ConnectionRow & { secrets: string }, plaintext: string) =>
      repo.replaceCiphertext(row.org_id, row.id, row.secrets, cipher.encrypt(plaintext, { orgId: row.org_id, connectionId: row.id }))

    /** The stored secrets; a value under an old key is re-encrypted with the current one on the way. */
    const openSecrets = (row: ConnectionRow) =>
      Effect.gen(function* () {
        if (row.secrets === null) return {} as Secrets
        const sealed = { ...row, secrets: row.secrets }
        const { plaintext, stale } = yield* decrypt(sealed)
        if (stale) yield* reseal(sealed, plaintext).pipe(Effect.ignoreLogged)
        return JSON.parse(plaintext) as Secrets
      })

    /** `sluice credentials reencrypt`: every org's secrets still under an old key, under the current one. */
    const reencryptAll = Effect.gen(function* () {
      const rows = yield* repo.listAll()
      const outcome = { checked: 0, reencrypted: 0, unreadable: [] as Array<string> }
      for (const row of rows) {
        if (row.secrets === null) continue
        const sealed = { ...row, secrets: row.secrets }
        outcome.checked++
        const opened = yield* Effect.either(decrypt(sealed))
        if (Either.isLeft(opened)) outcome.unreadable.push(`${row.org_id}/${row.name}`)
        else if (opened.right.stale) {
          yield* reseal(sealed, opened.right.plaintext)
          outcome.reencrypted++
        }
      }
      return outcome
    })

    const unknownConnection = (name: string) => new NotFound({ message: `No connection named "${name}" in this organization` })
    const findRow = (orgId: OrgId, name: string) =>
      repo.find(orgId, name).pipe(Effect.filterOrFail((row): row is ConnectionRow => row !== null, () => unknownConnection(name)))
    // A key limited to some connections finds no other, as if it did not exist.
    const usable = (principal: Principal, name: string) => (mayUseConnection(principal, name) ? Effect.void : Effect.fail(unknownConnection(name)))

    const writable = (row: ConnectionRow) =>
      row.source === "env"
        ? Effect.fail(new Forbidden({ message: `Connection "${row.name}" is configured by SP_CONNECTION_${row.name.toUpperCase()} and is read-only here` }))
        : Effect.void

    const insert = (
      orgId: OrgId,
      input: ConnectionInput,
      secrets: Secrets,
      source: ConnectionRow["source"] = "api",
      piiRules: ReadonlyArray<PiiRule> = []
    ) =>
      Effect.gen(function* () {
        const id = ConnectionId.make(`conn_${randomUUID().replaceAll("-", "")}`)
        const row: NewConnectionRow = { id, org_id: orgId, source, ...rowFields(orgId, id, input, secrets) }
        const inserted = yield* repo.insert(row)
        if (piiRules.length > 0) yield* repo.setPiiRules(orgId, id, piiRules)
        // Whatever was known under its name (a connection since gone, or none) is not this one.
        yield* forget(orgId, inserted.name, id)
        return toConnection(inserted)
      })

    const create = Effect.fn("Connections.create")(function* (principal: Principal, body: ConnectionInput) {
      const input = yield* placeLocalFile(body)
      return yield* insert(principal.orgId, input, splitSecrets(input).secrets)
    })

    const get = Effect.fn("Connections.get")(function* (principal: Principal, name: string) {
      yield* usable(principal, name)
      return toConnection(yield* findRow(principal.orgId, name))
    })

    const list = Effect.fn("Connections.list")(function* (principal: Principal, params: { limit?: number | undefined; cursor?: string | undefined }) {
      const limit = params.limit ?? 100
      const after = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, Cursor)
      const rows = yield* repo.list(principal.orgId, limit + 1, after && after[0])
      return pageOf(rows.filter((row) => mayUseConnection(principal, row.name)).map(toConnection), limit, (connection) => [connection.name])
    })

    /** Replaces the connection; secrets left out keep their stored values while the db_type and target stay the same. */
    const update = Effect.fn("Connections.update")(function* (principal: Principal, name: string, body: ConnectionInput) {
      const row = yield* findRow(principal.orgId, name)
      yield* writable(row)
      const input = yield* placeLocalFile(body)
      const previous = yield* openSecrets(row)
      const sameTarget = row.db_type === input.db_type
      const secrets = carryOverSecrets(previous, input, sameTarget)
      const updated = yield* repo.update(principal.orgId, row.id, rowFields(principal.orgId, row.id, input, secrets))
      yield* pools.retire(principal.orgId, row.id)
      yield* forget(principal.orgId, name, row.id)
      if (updated === null) return yield* new NotFound({ message: `No connection named "${name}" in this organization` })
      return toConnection(updated)
    })

    const remove = Effect.fn("Connections.remove")(function* (principal: Principal, name: string) {
      const row = yield* findRow(principal.orgId, name)
      yield* writable(row)
      // Its branches are copies on its server (or its branching service) that only it can reach to delete.
      const branches = yield* branchesRepo.countFor(principal.orgId, name)
      if (branches > 0) {
        return yield* new Conflict({
          message: `The connection has ${branches} database branch${branches === 1 ? "" : "es"}: delete ${branches === 1 ? "it" : "them"} first (DELETE /api/connections/${name}/dbbranch/projects/{project}/branches/{branch})`
        })
      }
      yield* repo.remove(principal.orgId, name)
      yield* pools.retire(principal.orgId, row.id)
      yield* forget(principal.orgId, name, row.id)
    })

    const clone = Effect.fn("Connections.clone")(function* (principal: Principal, name: string, newName: string) {
      const row = yield* findRow(principal.orgId, name)
      const secrets = yield* openSecrets(row)
      const input = { ...(row.settings as object), name: newName } as ConnectionInput
      // A clone keeps the PII rules: copying a connection must not be a way around its masking.
      return yield* insert(principal.orgId, input, secrets, "api", row.pii_rules)
    })

    const pinHostKey = (row: ConnectionRow, fingerprint: string) =>
      repo.pinHostKey(row.org_id, row.id, fingerprint).pipe(
        Effect.mapError(() => new ConnectorError({ step: "ssh", message: "The SSH host key could not be pinned: the gateway's store did not answer" })),
        Effect.flatMap((stored) => (stored === null || stored === fingerprint ? Effect.void : Effect.fail(hostKeyChanged(stored, fingerprint))))
      )

    const targetOf = (row: ConnectionRow) =>
      Effect.map(
        openSecrets(row),
        (secrets): PoolTarget & { readonly pii: PiiPolicy } => ({
          orgId: row.org_id,
          connectionId: row.id,
          version: row.version,
          connection: joinSecrets(row.settings, secrets),
          secrets: Object.values(secrets),
          hostKey: { pinned: row.host_key_fingerprint, pin: (fingerprint: string) => pinHostKey(row, fingerprint) },
          pii: { rules: row.pii_rules, version: row.pii_version }
        })
      )

    const targets = yield* makeLookupCache({
      ttlMs: TARGET_CACHE_TTL_MS,
      lookup: (key: string) => {
        // An org id has no NUL; a name may (a route's parameter): the name is all that follows the first.
        const at = key.indexOf("\u0000")
        return Effect.flatMap(findRow(key.slice(0, at) as OrgId, key.slice(at + 1)), targetOf)
      }
    })
    /** Forgets this replica's copy of a connection and its cached results after it is edited, deleted or replaced. */
    const forget = (orgId: OrgId, name: string, id: string) =>
      Effect.zipRight(targets.invalidate(targetKey(orgId, name)), results.invalidate(orgId, id))

    // Untraced: on the per-query path a span per call is measurable CPU (bench/README.md).
    /** Everything a connector needs to open this connection, secrets included. Never leaves the process. */
    const target = Effect.fnUntraced(function* (principal: Principal, name: string) {
      yield* usable(principal, name)
      return yield* targets.get(targetKey(principal.orgId, name))
    })
    /** `target` from what this replica holds in memory; undefined where only `target` can tell (not cached, or unknown, or not this key's). */
    const targetNow = (principal: Principal, name: string) => (mayUseConnection(principal, name) ? targets.peek(targetKey(principal.orgId, name)) : undefined)
    /** The same for background work, which runs for an org rather than a caller. */
    const targetIn = (orgId: OrgId, name: string) => targets.get(targetKey(orgId, name))

    /** A connection's db_type (which decides how its SQL is redacted in audit rows), or null when it does not resolve. */
    const dialectIn = (orgId: OrgId, name: string) =>
      Effect.map(Effect.option(targetIn(orgId, name)), Option.match({ onNone: () => null, onSome: (t) => t.connection.db_type }))

    /** Every connection of every org with its target, for the health loop; one whose secrets do not open is left out. */
    const everyTarget = repo.listAll().pipe(
      Effect.flatMap((rows) =>
        Effect.forEach(rows, (row) => Effect.option(targetOf(row)).pipe(Effect.map((target) => ({ row, target }))))
      )
    )

    /** A connection given in a request body, checked and placed as a stored one would be, but not stored. */
    const transientTarget = Effect.fn("Connections.transientTarget")(function* (principal: Principal, body: ConnectionInput) {
      const input = yield* placeLocalFile(body)
      return {
        orgId: principal.orgId,
        connectionId: `transient_${randomUUID()}`,
        version: 0,
        connection: input,
        secrets: Object.values(splitSecrets(input).secrets)
      } satisfies PoolTarget
    })

    /**
     * Self-hosted start: the local org's env connections become exactly the SP_CONNECTION_<NAME> ones
     * (added, replaced, or removed when their variable is gone). A name taken through the API wins.
     */
    const syncEnv = (inputs: ReadonlyArray<ConnectionInput>) =>
      Effect.gen(function* () {
        const rows = yield* repo.listAll().pipe(Effect.map((all) => all.filter((row) => row.org_id === LOCAL_ORG)))
        const wanted = new Set(inputs.map((input) => input.name))
        for (const row of rows.filter((r) => r.source === "env" && !wanted.has(r.name))) {
          yield* repo.remove(LOCAL_ORG, row.name)
          yield* pools.retire(LOCAL_ORG, row.id)
          yield* forget(LOCAL_ORG, row.name, row.id)
        }
        for (const body of inputs) {
          const input = yield* placeLocalFile(body)
          const secrets = splitSecrets(input).secrets
          const existing = rows.find((row) => row.name === input.name)
          if (existing === undefined) {
            // Replicas starting together mirror the same variables: the one that inserted it first has done this one's work.
            yield* insert(LOCAL_ORG, input, secrets, "env").pipe(Effect.catchTag("Conflict", () => Effect.void))
          }
          else if (existing.source === "api") {
            yield* Effect.logWarning(`SP_CONNECTION_${input.name.toUpperCase()} is ignored: a connection named "${input.name}" was created through the API`)
          } else {
            yield* repo.update(LOCAL_ORG, existing.id, rowFields(LOCAL_ORG, existing.id, input, secrets))
            yield* pools.retire(LOCAL_ORG, existing.id)
            yield* forget(LOCAL_ORG, existing.name, existing.id)
          }
        }
      })

    const piiPolicy = Effect.fn("Connections.piiPolicy")(function* (principal: Principal, name: string) {
      const row = yield* findRow(principal.orgId, name)
      return { rules: row.pii_rules, version: row.pii_version } satisfies PiiPolicy
    })

    /** Replaces a connection's PII rules; cached targets and results under the old rules are dropped. */
    const setPiiRules = Effect.fn("Connections.setPiiRules")(function* (principal: Principal, name: string, rules: ReadonlyArray<PiiRule>) {
      const row = yield* findRow(principal.orgId, name)
      const updated = yield* repo.setPiiRules(principal.orgId, row.id, rules)
      yield* forget(principal.orgId, name, row.id)
      if (updated === null) return yield* new NotFound({ message: `No connection named "${name}" in this organization` })
      return { rules: updated.pii_rules, version: updated.pii_version } satisfies PiiPolicy
    })

    return { create, get, list, update, remove, clone, piiPolicy, setPiiRules, target, targetNow, targetIn, dialectIn, transientTarget, everyTarget, syncEnv, checkPlacement: placeLocalFile, reencryptAll } as const
  }),
  dependencies: [ConnectionsRepo.Default, DbBranchesRepo.Default, ConnectorPools.Default, CredentialCipher.Default, ResultCache.Default]
}) {}
