import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { AppConfig } from "../layers/AppConfig"
import { drainingServer } from "../layers/DrainingServer"
import { shutdownPlan } from "../layers/ShutdownDeadline"
import { loadWebAssets, type WebAsset } from "./WebAssets"

// Scripts only from this origin; CodeMirror writes its styles into <style> elements, hence inline styles.
const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer"
}

/** The gateway's own paths, answered on the web app's origin too (the MCP snippet and the clone URLs the app shows name this origin). */
const isGatewayPath = (url: string) => /^\/(api|mcp|git|local-api-key|health)(\/|\?|$)/.test(url)

const safeDecode = Option.liftThrowable(decodeURIComponent)

const NOT_BUILT = `<!doctype html><title>Sluice</title><p>The web app is not built. Run <code>npm run build:web</code> (npm start does it) and restart.</p>`

const assetResponse = (asset: WebAsset, acceptsGzip: boolean) =>
  HttpServerResponse.uint8Array(acceptsGzip && asset.gzipped !== null ? asset.gzipped : asset.body, {
    contentType: asset.contentType,
    headers: {
      ...PAGE_HEADERS,
      "cache-control": asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
      vary: "accept-encoding",
      ...(acceptsGzip && asset.gzipped !== null ? { "content-encoding": "gzip" } : {})
    }
  })

/**
 * The web app on SP_WEB_PORT (0: none): its built files, any other path answered with the app's page
 * (client-side routes), and the gateway's own paths answered in this process by the same app and
 * pipeline as SP_PORT, so the browser needs no CORS and the gateway sees the browser's own address.
 */
export const webServer = (gateway: HttpApp.Default, pipeline: (app: HttpApp.Default) => HttpApp.Default) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const config = yield* AppConfig
      if (config.webPort === 0) return Layer.empty
      const assets = loadWebAssets()
      const index = assets.get("/index.html")
      const app = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        if (isGatewayPath(request.url)) return gateway
        if (request.method !== "GET" && request.method !== "HEAD") {
          return Effect.succeed(HttpServerResponse.unsafeJson({ code: "method_not_allowed", message: "Method not allowed" }, { status: 405 }))
        }
        const acceptsGzip = /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
        const pathname = Option.getOrElse(safeDecode(new URL(request.url, "http://web").pathname), () => "/")
        const asset = assets.get(pathname)
        if (asset !== undefined) return Effect.succeed(assetResponse(asset, acceptsGzip))
        if (pathname.startsWith("/assets/")) return Effect.succeed(HttpServerResponse.text("Not found", { status: 404, headers: PAGE_HEADERS }))
        if (index === undefined) return Effect.succeed(HttpServerResponse.html(NOT_BUILT).pipe(HttpServerResponse.setStatus(503), HttpServerResponse.setHeaders(PAGE_HEADERS)))
        return Effect.succeed(assetResponse(index, acceptsGzip))
      })
      // As middleware, the pipeline wraps the server's own failure-to-response step, as it does on SP_PORT.
      const gatewayPipeline = (handled: HttpApp.Default) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => (isGatewayPath(request.url) ? pipeline(handled) : handled))
      return drainingServer(app, gatewayPipeline, { port: config.webPort, host: config.host, shutdown: shutdownPlan(config.shutdownTimeoutSeconds), setting: "SP_WEB_PORT" }).pipe(
        Layer.tap(() => Effect.logInfo(`Web app at http://${config.host}:${config.webPort}`))
      )
    })
  )
