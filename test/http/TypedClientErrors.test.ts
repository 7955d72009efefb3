import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SluiceApi } from "../../src/api/Api"
import { Conflict, InsufficientScope, InvalidApiKey, InvalidRequest, NotFound, RateLimited, Unauthenticated } from "../../src/domain/Errors"
import { KeyId } from "../../src/domain/Ids"
import type { Scope } from "../../src/domain/Scope"
import { ApiKeys } from "../../src/services/ApiKeys"
import { inProcessApp, localOperator } from "../support/InProcess"

const keyWith = (...scopes: Array<Scope>) =>
  Effect.map(Effect.flatMap(ApiKeys, (keys) => keys.create(localOperator, { name: `k-${Math.random()}`, scopes })), (created) => created.key)

/** The typed client of the REST API, sending `key` when there is one. */
const clientWith = (key: string | null) =>
  HttpApiClient.make(SluiceApi, { transformClient: HttpClient.mapRequest((request) => (key === null ? request : HttpClientRequest.setHeader(request, "x-api-key", key))) })

/** The refusal's tag and fields as the typed client decoded them (an Error's message is not enumerable). */
const fields = (error: unknown) => ({ ...(error as object), message: (error as Error).message })

describe("the typed client reads the gateway's refusals", () => {
  // One request a minute per key on expensive routes, for the 429.
  layer(inProcessApp({ SP_PER_KEY_RPM: "1" }), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("as the declared error classes, with their code, message and extra fields", () =>
      Effect.gen(function* () {
        const admin = yield* clientWith(yield* keyWith("admin"))

        const keyless = yield* Effect.flip((yield* clientWith(null)).keys.list({ urlParams: {} }))
        expect(keyless).toBeInstanceOf(Unauthenticated)
        expect(fields(keyless)).toEqual({ _tag: "Unauthenticated", code: "unauthenticated", message: expect.any(String) })

        const unknownKey = yield* Effect.flip((yield* clientWith(`sp_${"0".repeat(32)}`)).keys.list({ urlParams: {} }))
        expect(unknownKey).toBeInstanceOf(InvalidApiKey)
        expect(fields(unknownKey)).toEqual({ _tag: "InvalidApiKey", code: "invalid_api_key", message: "The API key is not valid (unknown or deleted)" })

        const reader = yield* clientWith(yield* keyWith("read"))
        const outOfScope = yield* Effect.flip(reader.keys.create({ payload: { name: "by-a-reader", scopes: ["read"] } }))
        expect(outOfScope).toBeInstanceOf(InsufficientScope)
        expect(fields(outOfScope)).toEqual({ _tag: "InsufficientScope", code: "insufficient_scope", message: expect.any(String), required_scope: "admin" })

        const missing = yield* Effect.flip(admin.keys.remove({ path: { key_id: KeyId.make("no-such-key") } }))
        expect(missing).toBeInstanceOf(NotFound)
        expect(fields(missing)).toEqual({ _tag: "NotFound", code: "not_found", message: "No API key with id no-such-key" })

        yield* admin.keys.create({ payload: { name: "twice", scopes: ["read"] } })
        const duplicate = yield* Effect.flip(admin.keys.create({ payload: { name: "twice", scopes: ["read"] } }))
        expect(duplicate).toBeInstanceOf(Conflict)
        expect(fields(duplicate)).toEqual({ _tag: "Conflict", code: "conflict", message: 'A key named "twice" already exists in this organization' })

        const expired = yield* Effect.flip(admin.keys.create({ payload: { name: "expired", scopes: ["read"], expires_at: new Date(Date.now() - 60_000) } }))
        expect(expired).toBeInstanceOf(InvalidRequest)
        expect(fields(expired)).toEqual({ _tag: "InvalidRequest", code: "invalid_request", message: "expires_at must be in the future" })

        const badCursor = yield* Effect.flip(admin.keys.list({ urlParams: { cursor: "not-a-cursor" } }))
        expect(badCursor).toBeInstanceOf(InvalidRequest)
        expect(fields(badCursor)).toEqual({ _tag: "InvalidRequest", code: "invalid_request", message: "cursor is not a cursor returned by this API" })

        yield* admin.audit.export({ urlParams: {} })
        const limited = yield* Effect.flip(admin.audit.export({ urlParams: {} }))
        expect(limited).toBeInstanceOf(RateLimited)
        expect(fields(limited)).toEqual({ _tag: "RateLimited", code: "rate_limited", message: expect.stringContaining("key"), retry_after_seconds: expect.any(Number) })
      })
    )

    it.effect("while the wire still carries only the body: no class tag", () =>
      Effect.gen(function* () {
        const key = yield* keyWith("admin")
        const response = yield* Effect.flatMap(HttpClient.HttpClient, (http) => http.execute(HttpClientRequest.del("/api/keys/no-such-key").pipe(HttpClientRequest.setHeader("x-api-key", key))))
        expect([response.status, yield* response.json]).toEqual([404, { code: "not_found", message: "No API key with id no-such-key" }])
      })
    )
  })
})
