import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { ConfigProvider, Effect, Layer, ManagedRuntime } from "effect"
import { ServicesLive } from "../../app/App"
import { servingApp } from "../../app/HttpServer"
import { LOCAL_ORG, LOCAL_USER } from "../../src/domain/Ids"
import type { Principal } from "../../src/domain/Principal"
import type { Scope } from "../../src/domain/Scope"
import { ALL_SCOPES } from "../../src/domain/Scope"
import { ApiKeys } from "../../src/services/ApiKeys"
import { tempDataDir } from "./Gateway"

/**
 * The gateway's own app and services in this process, on a fresh embedded store, behind the same
 * request pipeline, with no local access: no process start per test. `env` adds settings.
 */
export const inProcessApp = (env: Record<string, string> = {}) =>
  servingApp((app, pipeline) => HttpServer.serve(app, pipeline)).pipe(
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provide(
      Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["SP_DATA_DIR", tempDataDir()], ["SP_LOCAL_ACCESS", "false"], ["SP_WEB_PORT", "0"], ...Object.entries(env)])))
    )
  )

export const InProcessApp = inProcessApp()

/** The self-hosted org's operator, as the CLI acts: every scope, to make keys and connections with. */
export const localOperator: Principal = { kind: "local", orgId: LOCAL_ORG, userId: LOCAL_USER, keyId: null, keyPrefix: null, scopes: ALL_SCOPES, role: "admin" }

/**
 * The in-process gateway as a server on a loopback port, for tests that speak HTTP to it with plain
 * requests: its URL, a key with `scopes`, a way to run effects against its services, and `stop`.
 */
export const startInProcess = async (env: Record<string, string> = {}) => {
  const runtime = ManagedRuntime.make(inProcessApp(env))
  const address = await runtime.runPromise(HttpServer.addressWith((address) => Effect.succeed(address)))
  const url = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
  const keyWith = (scopes: ReadonlyArray<Scope>) =>
    runtime.runPromise(Effect.flatMap(ApiKeys, (keys) => keys.create(localOperator, { name: `k-${Math.random()}`, scopes: [...scopes] })).pipe(Effect.map((k) => k.key)))
  return { url, runtime, keyWith, stop: () => runtime.dispose() }
}
