import { HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type { Scope } from "../../src/domain/Scope"
import { ApiKeys } from "../../src/services/ApiKeys"
import { inProcessApp, localOperator } from "../support/InProcess"

const keyWith = (...scopes: Array<Scope>) =>
  Effect.map(Effect.flatMap(ApiKeys, (keys) => keys.create(localOperator, { name: `k-${scopes.join("-")}-${Math.random()}`, scopes })), (created) => created.key)

const send = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.flatMap(HttpClient.HttpClient, (client) =>
    client.execute(request).pipe(Effect.flatMap((response) => Effect.map(response.json, (body) => ({ status: response.status, body: body as Record<string, unknown> }))))
  )
const mcpCall = (key: string, name: string, args: Record<string, unknown>) =>
  send(
    HttpClientRequest.post("/mcp").pipe(
      HttpClientRequest.setHeaders({ "x-api-key": key, accept: "application/json, text/event-stream" }),
      HttpClientRequest.bodyUnsafeJson({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })
    )
  )

describe("the gate, in process", () => {
  layer(inProcessApp(), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("refuses a missing or malformed credential on REST and MCP alike, with a code and a message", () =>
      Effect.gen(function* () {
        const keyless = yield* send(HttpClientRequest.get("/api/connections"))
        expect([keyless.status, keyless.body["code"]]).toEqual([401, "unauthenticated"])
        const malformed = yield* send(HttpClientRequest.get("/api/connections").pipe(HttpClientRequest.setHeader("x-api-key", "sp_nope")))
        expect([malformed.status, malformed.body["code"]]).toEqual([401, "invalid_api_key"])
        const basic = yield* send(HttpClientRequest.get("/api/connections").pipe(HttpClientRequest.setHeader("authorization", "Basic abc")))
        expect([basic.status, basic.body["message"]]).toEqual([401, expect.stringContaining("Bearer")])
        const mcp = yield* send(HttpClientRequest.post("/mcp").pipe(HttpClientRequest.bodyUnsafeJson({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })))
        expect([mcp.status, mcp.body["code"]]).toEqual([401, "unauthenticated"])
      })
    )

    it.effect("callers sharing a key's lookup are not interrupted when the one that started it is (a client hanging up)", () =>
      Effect.gen(function* () {
        const keys = yield* ApiKeys
        for (let round = 0; round < 20; round++) {
          const key = yield* keyWith("read")
          yield* keys.forgetVerified
          const starter = yield* Effect.fork(keys.verify(key))
          yield* Effect.yieldNow()
          const waiters = yield* Effect.forEach(Array.from({ length: 3 }), () => Effect.fork(keys.verify(key)))
          yield* Effect.yieldNow()
          yield* Fiber.interrupt(starter)
          const verified = yield* Effect.forEach(waiters, (waiter) => Effect.exit(Fiber.join(waiter)))
          expect(verified.map((exit) => exit._tag)).toEqual(["Success", "Success", "Success"])
        }
      })
    )

    it.effect("applies the declared scope on both surfaces, before anything else of the request is looked at", () =>
      Effect.gen(function* () {
        const reader = yield* keyWith("read")
        const create = yield* send(
          HttpClientRequest.post("/api/connections").pipe(HttpClientRequest.setHeader("x-api-key", reader), HttpClientRequest.bodyUnsafeJson({ not: "a connection" }))
        )
        expect([create.status, create.body["code"], create.body["required_scope"]]).toEqual([403, "insufficient_scope", "write"])
        const listed = yield* send(HttpClientRequest.get("/api/connections").pipe(HttpClientRequest.setHeader("x-api-key", reader)))
        expect(listed.status).toBe(200)
        // The tool's scope is checked before its arguments are decoded: bad arguments from a reader are a scope refusal.
        const tool = yield* mcpCall(reader, "query_database", { connection_name: "nope", sql: 42 })
        const result = tool.body["result"] as { isError: boolean; content: Array<{ text: string }> }
        expect(result.isError).toBe(true)
        expect(result.content[0]!.text).toBe("insufficient_scope: The query_database tool needs the query scope")
      })
    )
  })
})
