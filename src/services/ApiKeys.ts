import { randomUUID } from "node:crypto"
import { Cache, Duration, Effect, Exit, FiberSet, Schema } from "effect"
import { ApiKey, type CreateApiKey, CreatedApiKey, KEY_PATTERN } from "../domain/ApiKey"
import { Forbidden, InvalidApiKey, InvalidRequest, NotFound } from "../domain/Errors"
import { KeyId } from "../domain/Ids"
import { decodeCursor, pageOf } from "../domain/Pagination"
import type { Principal } from "../domain/Principal"
import { ApiKeysRepo, type ApiKeyRow } from "../repos/ApiKeysRepo"
import { generateRawKey, hashesEqual, hashKey, keyPrefix } from "./KeyMaterial"
import { conflictOnDuplicate, storeUnavailable } from "./StoreUnavailable"

const LAST_USED_RESOLUTION_MS = 60_000
// Under a second, so a key deleted on another replica is refused within 1 s without cross-replica messages.
const KEY_CACHE_TTL = Duration.millis(500)
const Cursor = Schema.Tuple(Schema.Number, Schema.String)

const storeDown = storeUnavailable("key store")

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
    const byHash = yield* Cache.makeWith({
      capacity: 10_000,
      lookup: repo.findByHash,
      timeToLive: (exit) => (Exit.isSuccess(exit) ? KEY_CACHE_TTL : Duration.zero)
    })
    const lastTouched = new Map<KeyId, number>()

    /** Drops every cached verification on this replica, after a change to what a key may do. */
    const forgetVerified = byHash.invalidateAll

    const create = Effect.fn("ApiKeys.create")(function* (principal: Principal, input: CreateApiKey) {
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
          key_hash: hashKey(raw)
        })
        .pipe(conflictOnDuplicate(`A key named "${input.name}" already exists in this organization`), storeDown)
      return new CreatedApiKey({ ...toApiKey(row), key: raw })
    })

    const list = Effect.fn("ApiKeys.list")(function* (principal: Principal, params: { limit?: number | undefined; cursor?: string | undefined }) {
      const limit = params.limit ?? 100
      const after = params.cursor === undefined ? null : yield* decodeCursor(params.cursor, Cursor)
      const rows = yield* repo
        .list(principal.orgId, limit + 1, after && ([new Date(after[0]), after[1]] as const))
        .pipe(storeDown)
      return pageOf(rows.map(toApiKey), limit, (key) => [key.created_at.getTime(), key.id])
    })

    let userKeySeen = false
    /** Whether a user key exists (the local key does not count); once seen, remembered by this replica. */
    const userKeysExist = Effect.suspend(() =>
      userKeySeen ? Effect.succeed(true) : Effect.tap(repo.userKeysExist.pipe(storeDown), (exists) => Effect.sync(() => (userKeySeen = exists)))
    )

    const remove = Effect.fn("ApiKeys.remove")(function* (principal: Principal, id: KeyId) {
      const removed = yield* repo.remove(principal.orgId, id).pipe(storeDown)
      yield* forgetVerified
      if (!removed) return yield* new NotFound({ message: `No API key with id ${id}` })
    })

    /** Raw key → its record; every refusal says why without echoing the key. */
    const verify = Effect.fn("ApiKeys.verify")(function* (raw: string) {
      if (!KEY_PATTERN.test(raw)) {
        return yield* new InvalidApiKey({ message: "The API key is malformed: expected sp_ followed by 32 hexadecimal characters" })
      }
      const hash = hashKey(raw)
      const row = yield* byHash.get(hash).pipe(storeDown)
      if (row === null || !hashesEqual(row.key_hash, hash)) {
        return yield* new InvalidApiKey({ message: "The API key is not valid (unknown or deleted)" })
      }
      const now = Date.now()
      if (row.expires_at !== null && row.expires_at.getTime() <= now) {
        return yield* new InvalidApiKey({ message: "The API key has expired" })
      }
      if (row.role === null) {
        return yield* new InvalidApiKey({ message: "The API key's owner is no longer a member of its organization" })
      }
      const lastUsed = Math.max(row.last_used_at?.getTime() ?? 0, lastTouched.get(row.id) ?? 0)
      if (now - lastUsed > LAST_USED_RESOLUTION_MS) {
        lastTouched.set(row.id, now)
        yield* FiberSet.run(background, repo.touch(row.id, new Date(now)).pipe(Effect.ignoreLogged))
      }
      return row
    })

    /** The org of a key that exists or was deleted (expired, owner gone, revoked), to audit a refused request under; null otherwise. */
    const orgOf = (raw: string) =>
      KEY_PATTERN.test(raw) ? repo.orgOfHash(hashKey(raw)).pipe(Effect.orElseSucceed(() => null)) : Effect.succeed(null)

    return { create, list, remove, verify, orgOf, forgetVerified, userKeysExist } as const
  }),
  dependencies: [ApiKeysRepo.Default]
}) {}
