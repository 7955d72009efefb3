import * as net from "node:net"
import { Effect, Layer } from "effect"
import { AppConfig } from "../layers/AppConfig"
import { makeDbtProxy } from "../src/dbt/DbtProxy"

/** The dbt proxy on SP_DBT_PROXY_PORT (0: none), on the gateway's host; its sessions end with the gateway. */
export const DbtProxyServerLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (config.dbtProxyPort === 0) return
    const proxy = yield* makeDbtProxy
    const sockets = new Set<net.Socket>()
    const server = net.createServer((socket) => {
      sockets.add(socket)
      socket.once("close", () => sockets.delete(socket))
      proxy.accept(socket)
    })
    yield* Effect.acquireRelease(
      Effect.async<void, Error>((resume) => {
        server.once("error", (error) => resume(Effect.fail(new Error(`The dbt proxy could not listen on ${config.host}:${config.dbtProxyPort} (SP_DBT_PROXY_PORT): ${error.message}`))))
        server.listen(config.dbtProxyPort, config.host, () => resume(Effect.void))
      }).pipe(Effect.orDie),
      () =>
        Effect.async<void>((resume) => {
          for (const socket of sockets) socket.destroy()
          server.close(() => resume(Effect.void))
        })
    )
    yield* Effect.logInfo(`dbt proxy listening on ${config.host}:${config.dbtProxyPort}`)
  })
)
