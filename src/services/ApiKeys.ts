import { randomUUID } from "node:crypto"
import { Effect, FiberSet, Schema } from "effect"
import { ApiKey, type CreateApiKey, CreatedApiKey, KEY_PATTERN } from "../domain/ApiKey"
import { Conflict, Forbidden, InvalidApiKey, InvalidRequest, NotFound } from "../domain/Errors"
import { isLocalKeyId, KeyId, type OrgId } from "../domain/Ids"
import { decodeCursor, pageOf } from "../domain/Pagination"
import type { Principal } from "../domain/Principal"
import { ApiKeysRepo, type ApiKeyRow, type KeyCredentialRow } from "../repos/ApiKeysRepo"
import { generateRawKey, hashesEqual, hashKey, keyPrefix } from "./KeyMaterial"
import { makeLookupCache } from "./LookupCache"

const LAST_USED_RESOLUTION_MS = 60_000
// Under a second, so a key deleted on another replica is refused within 1 s without cross-replica messages.
const KEY_CACHE_TTL_MS = 500
const Cursor = Schema.Tuple(Schema.Number, KeyId)

const toApiKey = (row: ApiKeyRow) =>
  new ApiKey({
    id: row.id,
    name: row.name,
    scopes: row.scopes,
    prefix: row.prefix,
    organization: row.org_id,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    expires_at: row.expires_at
  })

export class ApiKeys extends Effect.Service<ApiKeys>()("sluice/ApiKeys", {
  scoped: Effect.gen(function* () {
    const repo = yield* ApiKeysRepo
    const background = yield* FiberSet.make()
    const runInBackground = yield* FiberSet.runtime(background)<never>()
    const byHash = yield* makeLookupCache({ lookup: repo.findByHash, ttlMs: KEY_CACHE_TTL_MS })
    const lastTouched = new Map<KeyId, number>()

    /** Drops every cached verification on this replica, after a change to what a key may do. */
    const forgetVerified = byHash.invalidateAll

    /**
     * A new key of the principal's; `connections` limits it to those of its org's connections, and
     * `branch` lets it write in one branch of its one connection, and `knowledgeOverlay` is served
     * as if approved (an evaluation task's key).
     */
    const create = Effect.fn("ApiKeys.create")(function* (
      principal: Principal,
      input: CreateApiKey,
      limits: {
        readonly connections?: ReadonlyArray<string>
        readonly branch?: { readonly project: string; readonly name: string }
        readonly knowledgeOverlay?: ReadonlyArray<string>
      } = {}
    ) {
      if (limits.branch !== undefined && limits.connections?.length !== 1) return yield* Effect.dieMessage("a key that writes in a branch is limited to that branch's connection")
      const scopes = [...new Set(input.scopes)]
      if (scopes.includes("admin") && principal.role !== "admin") {
        return yield* new Forbidden({ message: "Creating a key with the admin scope needs an admin role in the organization" })
      }
      if (input.expires_at !== undefined && input.expires_at.getTime() <= Date.now()) {
        return yield* new InvalidRequest({ message: "expires_at must be in the future" })
      }
      const raw = generateRawKey()
      const row = yield* repo
        .insert({
          id: KeyId.make(`key_${randomUUID().replaceAll("-", "")}`),
          org_id: principal.orgId,
          user_id: principal.userId,
          name: input.name,
          prefix: keyPrefix(raw),
          scopes,
          expires_at: input.expires_at ?? null,
          connections: limits.connections ?? null,
          branch_project: limits.branch?.project ?? null,
          branch_name: limits.branch?.name ?? null,
          knowledge_overlay: limits.knowledgeOverlay === undefined || limits.knowledgeOverlay.length === 0 ? null : limits.knowledgeOverlay,
          key_hash: hashKey(raw)
        })
      return new CreatedApiKey({ ...toApiKey(row), key: raw })
    })

    const list = Effect.fn("ApiKeys.list")(function* (principal: Principal, params: { limit?: number | undefined; cursor?: string | undefined }) {
      const limit = params.limit ?? 100
      const after = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, Cursor)
      const rows = yield* repo.list(principal.orgId, limit + 1, after && ([new Date(after[0]), after[1]] as const))
      return pageOf(rows.map(toApiKey), limit, (key) => [key.created_at.getTime(), key.id])
    })

    let userKeySeen = false
    /** Whether a user key exists (the local key does not count); once seen, remembered by this replica. */
    const userKeysExist = Effect.suspend(() =>
      userKeySeen ? Effect.succeed(true) : Effect.tap(repo.userKeysExist(), (exists) => Effect.sync(() => (userKeySeen = exists)))
    )

    /** Deletes the key and drops this replica's cached verifications (others drop theirs within 500 ms); false when it was gone. */
    const revoke = (orgId: OrgId, id: KeyId) => Effect.tap(repo.remove(orgId, id), () => forgetVerified)

    /** Deletes the org's keys named with `prefix` (a job's own keys, whether or not it kept their ids), as `revoke` does each. */
    const revokeNamed = (orgId: OrgId, prefix: string) => Effect.tap(repo.removeNamed(orgId, prefix), () => forgetVerified)

    const remove = Effect.fn("ApiKeys.remove")(function* (principal: Principal, id: KeyId) {
      if (isLocalKeyId(id)) {
        return yield* new Conflict({
          message:
            "The local key cannot be deleted: this machine's web app and CLI sign in with it, and the gateway would make it again at its next start. To stop local access, start the gateway with SP_LOCAL_ACCESS=false and use keys you make"
        })
      }
      if (!(yield* revoke(principal.orgId, id))) return yield* new NotFound({ message: `No API key with id ${id}` })
    })

    type UsableRow = KeyCredentialRow & { readonly role: NonNullable<KeyCredentialRow["role"]> }
    /** Why a key's record opens nothing (unknown, expired, its owner no longer a member), or undefined where it is usable. */
    const refusalOf = (row: KeyCredentialRow | null): InvalidApiKey | undefined => {
      if (row === null) return new InvalidApiKey({ message: "The API key is not valid (unknown or deleted)" })
      if (row.expires_at !== null && row.expires_at.getTime() <= Date.now()) return new InvalidApiKey({ message: "The API key has expired" })
      if (row.role === null) return new InvalidApiKey({ message: "The API key's owner is no longer a member of its organization" })
      return undefined
    }
    /** A key's record if it still opens anything: known, not expired, its owner still a member. */
    const usable = (row: KeyCredentialRow | null) => {
      const refusal = refusalOf(row)
      return refusal === undefined ? Effect.succeed(row as UsableRow) : Effect.fail(refusal)
    }

    /** A key's record by id, checked as `verify` checks a raw key: for work that acts with it after its request ended. */
    const current = (id: KeyId) => repo.findById(id).pipe(Effect.flatMap(usable))

    /** Notes that a usable key was used, in the store at most once a LAST_USED_RESOLUTION_MS, in the background. */
    const used = (row: UsableRow) => {
      const now = Date.now()
      const lastUsed = Math.max(row.last_used_at?.getTime() ?? 0, lastTouched.get(row.id) ?? 0)
      if (now - lastUsed <= LAST_USED_RESOLUTION_MS) return row
      lastTouched.set(row.id, now)
      runInBackground(repo.touch(row.id, new Date(now)).pipe(Effect.ignoreLogged))
      return row
    }

    // Untraced: it runs on every request, and a span per call is measurable CPU (bench/README.md).
    /** Raw key → its record; every refusal says why without echoing the key. */
    const verify = Effect.fnUntraced(function* (raw: string) {
      if (!KEY_PATTERN.test(raw)) {
        return yield* new InvalidApiKey({ message: "The API key is malformed: expected sp_ followed by 32 hexadecimal characters" })
      }
      const hash = hashKey(raw)
      // Callers with the same key share one lookup: interrupting its starter (a client gone) must not interrupt the others.
      const found = yield* byHash.get(hash)
      return used(yield* usable(found !== null && hashesEqual(found.key_hash, hash) ? found : null))
    })

    /** `verify` from what this replica holds in memory: the usable key's record, or undefined where only `verify` can tell (not cached, or refused). */
    const verifiedInMemory = (raw: string): UsableRow | undefined => {
      if (!KEY_PATTERN.test(raw)) return undefined
      const hash = hashKey(raw)
      const found = byHash.peek(hash)
      if (found === undefined || found === null || !hashesEqual(found.key_hash, hash) || refusalOf(found) !== undefined) return undefined
      return used(found as UsableRow)
    }

    /** The org of a key that exists or was deleted (expired, owner gone, revoked), to audit a refused request under; null otherwise. */
    const orgOf = (raw: string) =>
      KEY_PATTERN.test(raw) ? repo.orgOfHash(hashKey(raw)).pipe(Effect.orElseSucceed(() => null)) : Effect.succeed(null)

    return { create, list, remove, revoke, revokeNamed, verify, verifiedInMemory, current, orgOf, forgetVerified, userKeysExist } as const
  }),
  dependencies: [ApiKeysRepo.Default]
}) {}
