import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { ConfigProvider, Layer } from "effect"
import { ServicesLive } from "../../app/App"
import { servingApp } from "../../app/HttpServer"
import { LOCAL_ORG, LOCAL_USER } from "../../src/domain/Ids"
import type { Principal } from "../../src/domain/Principal"
import { ALL_SCOPES } from "../../src/domain/Scope"
import { tempDataDir } from "./Gateway"

/**
 * The gateway's own app and services in this process, on a fresh embedded store, behind the same
 * request pipeline, with no local access: no process start per test.
 */
export const InProcessApp = servingApp((app, pipeline) => HttpServer.serve(app, pipeline)).pipe(
  Layer.provideMerge(ServicesLive),
  Layer.provideMerge(NodeHttpServer.layerTest),
  Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["SP_DATA_DIR", tempDataDir()], ["SP_LOCAL_ACCESS", "false"], ["SP_WEB_PORT", "0"]]))))
)

/** The self-hosted org's operator, as the CLI acts: every scope, to make keys and connections with. */
export const localOperator: Principal = { kind: "local", orgId: LOCAL_ORG, userId: LOCAL_USER, keyId: null, keyPrefix: null, scopes: ALL_SCOPES, role: "admin" }
