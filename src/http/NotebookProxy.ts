import * as http from "node:http"
import * as net from "node:net"
import type { Duplex } from "node:stream"
import { randomUUID } from "node:crypto"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Runtime } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { LOCAL_ORG } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { resolveClientAddress } from "../gate/ClientAddress"
import { allowedHostGuard } from "../gate/Envelope"
import { Gate } from "../gate/Gate"
import { errorResponse } from "../gate/RequestPipeline"
import { type RequestInfo, RequestState } from "../gate/RequestState"
import { Audit } from "../services/Audit"
import { auditRow, newAuditDraft } from "../services/AuditDraft"
import { NotebookSessions, type NotebookTarget } from "../services/NotebookSessions"

// The most of one response the proxy holds (a notebook, a static asset).
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024
const SESSION_PATH = /^\/notebook\/([A-Za-z0-9_-]{1,100})(?:\/|$)/

// Hop-by-hop headers, and what is the gateway's own (the caller's credential, its origin) or Jupyter's (its cookies): never forwarded.
const NOT_FORWARDED = new Set(["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "x-api-key", "authorization", "cookie", "origin", "referer", "content-length"])
const NOT_RETURNED = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "set-cookie", "content-security-policy", "x-frame-options"])

/** The request's headers as the session's server gets them: its own token instead of the caller's credential. */
const forwardedHeaders = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>, target: NotebookTarget) => {
  const kept: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || NOT_FORWARDED.has(name)) continue
    kept[name] = Array.isArray(value) ? value.join(", ") : (value as string)
  }
  return { ...kept, host: "localhost", authorization: `token ${target.jupyterToken}` }
}

const sessionIdOf = (url: string) => SESSION_PATH.exec(url)?.[1] ?? null

/** The status a gate or session failure answers with, by its kind. */
const statusOf = (tag: string) =>
  ({ NotFound: 404, Conflict: 409, InsufficientScope: 403, Forbidden: 403, RateLimited: 429, Unavailable: 503, InvalidRequest: 400 })[tag] ?? 401

/** Who calls and where their session is: the gate (credential, limits, the execute scope: a notebook runs code), then the caller's own running session. */
const admitted = (gate: Gate, sessions: NotebookSessions, info: RequestInfo, headers: Readonly<Record<string, string | undefined>>, id: string) =>
  Effect.gen(function* () {
    const principal: Principal = yield* gate.admit(info, headers, "general")
    yield* gate.authorize(principal, "execute", "A notebook session", false)
    return yield* sessions.target(principal, id)
  })

/**
 * `/notebook/{session_id}/…` over HTTP: authenticated like the REST API (a key, a session token or
 * local access), then forwarded to the caller's own session's Jupyter server on its Unix socket with
 * that server's token; another user's or org's session is not found, one not running a conflict.
 */
export const NotebookProxyRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const gate = yield* Gate
    const sessions = yield* NotebookSessions

    const handle = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const state = yield* Effect.serviceOption(RequestState)
      if (Option.isNone(state)) return errorResponse(500, "internal_error", "Internal error")
      const info = state.value
      info.eventType = "notebook_proxy"
      const id = sessionIdOf(request.url)
      if (id === null) return errorResponse(404, "not_found", "No notebook session here: the path is /notebook/{session_id}/…")
      const target = yield* Effect.either(admitted(gate, sessions, info, request.headers, id))
      if (target._tag === "Left") return errorResponse(statusOf(target.left._tag), target.left.code, target.left.message)
      const body = request.method === "GET" || request.method === "HEAD" ? undefined : new Uint8Array(yield* Effect.orDie(request.arrayBuffer))
      const upstream = yield* Effect.async<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer } | null>((resume) => {
        const forwarded = http.request({ socketPath: target.right.socketPath, method: request.method, path: request.url, headers: forwardedHeaders(request.headers, target.right) }, (response) => {
          const chunks: Array<Buffer> = []
          let size = 0
          response.on("data", (chunk: Buffer) => {
            size += chunk.length
            if (size > MAX_RESPONSE_BYTES) return response.destroy()
            chunks.push(chunk)
          })
          response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 502, headers: response.headers, body: Buffer.concat(chunks) })))
          response.on("error", () => resume(Effect.succeed(null)))
        })
        forwarded.on("error", () => resume(Effect.succeed(null)))
        forwarded.end(body)
        return Effect.sync(() => forwarded.destroy())
      })
      if (upstream === null) return errorResponse(502, "bad_gateway", "The notebook session's server did not answer")
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(upstream.headers)) {
        if (value === undefined || NOT_RETURNED.has(name) || name === "content-type") continue
        headers[name] = Array.isArray(value) ? value.join(", ") : value
      }
      return HttpServerResponse.uint8Array(upstream.body, { status: upstream.status, headers, contentType: upstream.headers["content-type"] ?? "application/octet-stream" })
    })
    yield* router.all("/notebook/*", handle)
  })
)

/** A WebSocket close frame (code and reason) from the server side, unmasked. */
const closeFrame = (code: number, reason: string) => {
  const text = Buffer.from(reason.slice(0, 120), "utf8")
  const payload = Buffer.alloc(2 + text.length)
  payload.writeUInt16BE(code, 0)
  text.copy(payload, 2)
  return Buffer.concat([Buffer.from([0x88, payload.length]), payload])
}

/** The WebSocket close code a session that ended tells its open connections. */
export const SESSION_ENDED = 4000

/**
 * The same proxy for WebSocket upgrades (a kernel's channels): the credential in a header (never a
 * token in the URL, which lands in logs), checked at the gate; the connection spliced to the
 * session's server; and, when the session ends (idle, stopped, killed), a close frame saying why.
 * Each connection is an audit row.
 */
export const makeNotebookUpgrade = Effect.gen(function* () {
  const gate = yield* Gate
  const sessions = yield* NotebookSessions
  const audit = yield* Audit
  const config = yield* AppConfig
  const hostAllowed = allowedHostGuard(config)
  const trustedProxies = new Set(config.trustedProxies)
  const runFork = Runtime.runFork(yield* Effect.runtime<never>())

  const refuse = (socket: Duplex, status: number, code: string, message: string) => {
    const body = JSON.stringify({ code, message })
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? "Error"}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
  }

  const upgrade = (request: http.IncomingMessage, socket: Duplex, head: Buffer) =>
    Effect.gen(function* () {
      const started = performance.now()
      const headers = request.headers as Readonly<Record<string, string | undefined>>
      const info: RequestInfo = {
        ...newAuditDraft(randomUUID(), "notebook_websocket", null, config.selfHosted ? LOCAL_ORG : null),
        client: resolveClientAddress(request.socket.remoteAddress ?? null, headers, trustedProxies),
        streamedRows: false,
        bodyTooLarge: false,
        answered: false
      }
      const route = (request.url ?? "").split("?")[0]!
      const record = (status: number, outcome: "success" | "refused", reason: string | null) =>
        audit
          .record(null, {
            ...auditRow(info, { route, durationMs: performance.now() - started, outcome, method: "GET", status, blockReason: reason, clientIp: info.client.ip, userAgent: headers["user-agent"] ?? null })
          })
          .pipe(Effect.catchAll((error) => Effect.logWarning("a notebook WebSocket's audit row could not be written", error.message)))
      const id = sessionIdOf(request.url ?? "")
      if (!hostAllowed(headers)) {
        refuse(socket, 403, "forbidden", "The Host or Origin of this request is not allowed (set SP_ALLOWED_HOSTS)")
        return yield* record(403, "refused", "forbidden")
      }
      if (id === null) return refuse(socket, 404, "not_found", "No notebook session here: the path is /notebook/{session_id}/…")
      const target = yield* Effect.either(admitted(gate, sessions, info, headers, id))
      if (target._tag === "Left") {
        const status = statusOf(target.left._tag)
        refuse(socket, status, target.left.code, target.left.message)
        return yield* record(status, "refused", target.left.code)
      }
      const upstream = net.connect(target.right.socketPath)
      let endedBecause: string | undefined
      const release = target.right.holdSocket({
        end: (reason) => {
          endedBecause = reason
          upstream.destroy()
        }
      })
      const lines = [`GET ${request.url} HTTP/1.1`, ...Object.entries({ ...forwardedHeaders(request.headers, target.right), connection: "Upgrade", upgrade: "websocket" }).map(([name, value]) => `${name}: ${value}`)]
      upstream.on("connect", () => {
        upstream.write(`${lines.join("\r\n")}\r\n\r\n`)
        if (head.length > 0) upstream.write(head)
        upstream.pipe(socket)
        socket.pipe(upstream)
      })
      upstream.on("close", () => {
        release()
        if (endedBecause !== undefined && socket.writable) socket.end(closeFrame(SESSION_ENDED, endedBecause))
        else socket.destroy()
      })
      upstream.on("error", () => upstream.destroy())
      socket.on("error", () => upstream.destroy())
      socket.on("close", () => upstream.destroy())
      yield* record(101, "success", null)
    }).pipe(Effect.catchAllCause((cause) => Effect.zipRight(Effect.sync(() => socket.destroy()), Effect.logError("a notebook WebSocket failed", cause))))

  return (request: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!(request.url ?? "").startsWith("/notebook/")) return refuse(socket, 404, "not_found", "Not found")
    runFork(upgrade(request, socket, head))
  }
})
