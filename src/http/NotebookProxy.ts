import * as http from "node:http"
import * as net from "node:net"
import type { Duplex } from "node:stream"
import { randomUUID } from "node:crypto"
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Effect, Option, Runtime } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { LOCAL_ORG } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { resolveClientAddress } from "../gate/ClientAddress"
import { sessionOfHost } from "../domain/NotebookOrigin"
import { notebookHostGuard } from "../gate/Envelope"
import { credentialOf, Gate } from "../gate/Gate"
import { bodyLimitOf, errorResponse, failureStatus } from "../gate/RequestPipeline"
import { type RequestInfo, RequestState } from "../gate/RequestState"
import { Audit } from "../services/Audit"
import { auditRow, newAuditDraft } from "../services/AuditDraft"
import { NotebookSessions, type NotebookTarget } from "../services/NotebookSessions"

const SESSION_PATH = /^\/notebook\/([A-Za-z0-9_-]{1,100})(?:\/|\?|$)/
const OPEN_PATH = /^\/notebook\/[A-Za-z0-9_-]{1,100}\/open\?ticket=([0-9a-f]{64})$/
// The only upgrades a notebook needs: its kernels' channels. Anything else would be a raw tunnel past the gate.
const KERNEL_CHANNELS = /^\/notebook\/[A-Za-z0-9_-]{1,100}\/api\/kernels\/[0-9a-f-]{36}\/channels(?:\?[^#]*)?$/
// What a session over its disk quota refuses: anything that writes files or runs a kernel.
const WRITES = /^\/notebook\/[A-Za-z0-9_-]{1,100}\/api\/(?:contents|kernels|sessions)(?:\/|\?|$)/
const COOKIE = "sluice_notebook"
const COOKIE_VALUE = new RegExp(`(?:^|;\\s*)${COOKIE}=([0-9a-f]{64})(?:;|$)`)
// A session's server that says nothing for this long (no headers, no bytes of a body) is given up on.
const UPSTREAM_IDLE_MS = 60_000
const UPGRADE_HEAD_BYTES = 16 * 1024
const MAX_HELD_PER_SESSION = 32

// Hop-by-hop headers, and what is the gateway's own (the caller's credential, its origin) or Jupyter's (its cookies): never forwarded.
const NOT_FORWARDED = new Set(["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "x-api-key", "authorization", "cookie", "origin", "referer", "content-length"])
// What of a session's server's answer reaches the browser: what a page and a download need, nothing that acts beyond the answer
// (a service worker's wider scope, cleared site data, CORS, cookies). Its server runs as the session's uid, whose code can replace it.
const RETURNED = new Set(["content-disposition", "content-encoding", "content-language", "cache-control", "etag", "last-modified", "expires", "vary", "accept-ranges", "content-range", "retry-after"])
// A path on the same origin: one slash, then no slash or backslash (browsers read `/\\host` as `//host`), and nothing a browser strips (tabs, newlines).
const SAME_ORIGIN_PATH = /^\/(?![/\\])[^\\\x00-\x20\x7f]*$/

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

/**
 * Notebook sessions' origins: `/notebook/{session_id}/…` over HTTP and (kernel channels only)
 * WebSocket, on SP_NOTEBOOK_PORT, each session at an origin of its own (SP_NOTEBOOK_ORIGIN) — a
 * notebook's pages run whatever notebooks write, so they must hold neither the gateway's authority
 * nor another session's. A caller is its session's starter: by the same key (or session token;
 * never local access) at the gate, or, for a browser, by the cookie a one-time link
 * (`/notebook/{id}/open?ticket=…`, from starting the session) set at that session's origin. The
 * request goes to the session's Jupyter server on its Unix socket with that server's own token; its
 * answer streams back, an allow-list of its headers with it. Another credential's session is not
 * found, one not running a conflict. Each request (and each WebSocket) is an audit row.
 */
export const makeNotebookProxy = Effect.gen(function* () {
  const gate = yield* Gate
  const sessions = yield* NotebookSessions
  const audit = yield* Audit
  const config = yield* AppConfig
  const hostAllowed = notebookHostGuard(config)
  const trustedProxies = new Set(config.trustedProxies)
  const runFork = Runtime.runFork(yield* Effect.runtime<never>())
  const secure = config.notebookOrigins.scheme === "https"
  /** The session a request is for: its Host's (each session has an origin of its own) and its path's, which must agree. */
  const sessionOf = (url: string, host: string | undefined) => {
    const id = sessionIdOf(url)
    return id !== null && id === sessionOfHost(config.notebookOrigins, host) ? id : null
  }

  /**
   * Who calls, and where their session is: a key (or session token; never local access) at the
   * gate, else the browser's cookie for this session; the execute scope (a notebook runs code); then
   * the caller's own running session.
   */
  const admitted = (info: RequestInfo, headers: Readonly<Record<string, string | undefined>>, id: string) =>
    Effect.gen(function* () {
      const cookie = credentialOf(headers) === null ? COOKIE_VALUE.exec(headers["cookie"] ?? "")?.[1] : undefined
      const principal: Principal = cookie === undefined ? yield* gate.admit(info, headers, "general", "notebook") : yield* gate.admitWith(info, "general", sessions.cookiePrincipal(id, cookie))
      yield* gate.authorize(principal, "execute", "A notebook session", false)
      return yield* sessions.target(principal, id)
    })

  /** A one-time link: its ticket becomes a cookie for this session's path, and the browser goes on to the notebook UI. The id is the session's (a checked path). */
  const open = (info: RequestInfo, id: string, ticket: string) =>
    Effect.gen(function* () {
      let cookie = ""
      const principal = yield* gate.admitWith(
        info,
        "general",
        Effect.map(sessions.exchangeTicket(id, ticket), (opened) => {
          cookie = opened.cookie
          return opened.principal
        })
      )
      yield* gate.authorize(principal, "execute", "A notebook session", false)
      const path = `/notebook/${id}/`
      // A page of this origin goes on to the notebook, not a redirect: a SameSite=Strict cookie set on a navigation another site began
      // is not sent along that navigation's redirects, only on one this origin begins.
      return HttpServerResponse.text(`<!doctype html><meta http-equiv="refresh" content="0;url=${path}tree"><title>Opening the notebook</title><a href="${path}tree">Open the notebook</a>`, {
        contentType: "text/html; charset=utf-8",
        headers: { "set-cookie": `${COOKIE}=${cookie}; Path=${path}; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}` }
      })
    })

  /**
   * The session's server's answer to the request, its body streamed as it comes, the request's
   * streamed to it as it comes (at most the limit); "too_large" past the limit; null where the
   * server did not answer in time, or answered as no Jupyter does.
   */
  const forward = (request: HttpServerRequest.HttpServerRequest, target: NotebookTarget) =>
    Effect.async<http.IncomingMessage | "too_large" | null>((resume) => {
      let settled = false
      const settle = (outcome: http.IncomingMessage | "too_large" | null) => {
        if (settled) return
        settled = true
        resume(Effect.succeed(outcome))
      }
      // A connection of its own (no pool): a Unix socket's connect is cheap, and no answer waits behind another's.
      const forwarded = http.request({ socketPath: target.socketPath, method: request.method, path: request.url, headers: forwardedHeaders(request.headers, target), agent: false })
      forwarded.setTimeout(UPSTREAM_IDLE_MS, () => forwarded.destroy())
      let answer: http.IncomingMessage | undefined
      forwarded.on("response", (response) => {
        answer = response
        settle(response)
      })
      // An upgrade in answer to a plain request is no Jupyter's (the session's code replaced its server): the socket is not kept.
      forwarded.on("upgrade", (_, socket) => {
        socket.destroy()
        forwarded.destroy()
        settle(null)
      })
      forwarded.on("error", () => settle(null))
      forwarded.on("close", () => settle(null))
      // A client that leaves takes its request to the session's server with it, whatever that server was doing.
      NodeHttpServerRequest.toServerResponse(request).once("close", () => {
        forwarded.destroy()
        answer?.destroy()
      })
      if (request.method === "GET" || request.method === "HEAD") forwarded.end()
      else {
        const incoming = NodeHttpServerRequest.toIncomingMessage(request)
        const limit = bodyLimitOf(request)
        let size = 0
        incoming.on("data", (chunk: Buffer) => {
          size += chunk.length
          if (size <= limit) return
          incoming.unpipe(forwarded)
          incoming.resume()
          forwarded.destroy()
          settle("too_large")
        })
        incoming.pipe(forwarded)
      }
      return Effect.sync(() => forwarded.destroy())
    })

  // Requests and WebSockets each session's server may be asked to hold at once.
  const held = new Map<string, number>()
  const hold = (id: string) => {
    const count = held.get(id) ?? 0
    if (count >= MAX_HELD_PER_SESSION) return undefined
    held.set(id, count + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const left = (held.get(id) ?? 1) - 1
      if (left === 0) held.delete(id)
      else held.set(id, left)
    }
  }

  const app: HttpApp.Default = Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const state = yield* Effect.serviceOption(RequestState)
    if (Option.isNone(state)) return errorResponse(500, "internal_error", "Internal error")
    const info = state.value
    info.eventType = "notebook_proxy"
    const id = sessionOf(request.url, request.headers["host"])
    if (id === null) return errorResponse(404, "not_found", "This is a notebook session's origin: it serves that session's paths, /notebook/{session_id}/…, alone")
    // A service worker would outlive the answer and act on every later one: a notebook's pages may not register one.
    if (request.headers["service-worker"] !== undefined) return errorResponse(403, "forbidden", "Notebook pages may not register service workers")
    const ticket = request.method === "GET" ? OPEN_PATH.exec(request.url)?.[1] : undefined
    if (ticket !== undefined) {
      const opened = yield* Effect.either(open(info, id, ticket))
      return opened._tag === "Right" ? opened.right : errorResponse(failureStatus(opened.left._tag), opened.left.code, opened.left.message)
    }
    const target = yield* Effect.either(admitted(info, request.headers, id))
    if (target._tag === "Left") return errorResponse(failureStatus(target.left._tag), target.left.code, target.left.message)
    const full = target.right.refusingWrites()
    if (full !== null && (request.method === "POST" || request.method === "PUT" || request.method === "PATCH") && WRITES.test(request.url)) {
      return errorResponse(507, "insufficient_storage", full)
    }
    const release = hold(id)
    if (release === undefined) return errorResponse(429, "rate_limited", `A notebook session serves at most ${MAX_HELD_PER_SESSION} requests and connections at once`)
    // Held until the answer has streamed out (or the client left).
    const upstream = yield* forward(request, target.right).pipe(Effect.onInterrupt(() => Effect.sync(release)))
    if (upstream === "too_large" || upstream === null) release()
    else upstream.once("close", release)
    if (upstream === "too_large") return errorResponse(413, "payload_too_large", `Request bodies are limited to ${bodyLimitOf(request)} bytes`)
    if (upstream === null) return errorResponse(502, "bad_gateway", "The notebook session's server did not answer")
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (value !== undefined && RETURNED.has(name)) headers[name] = Array.isArray(value) ? value.join(", ") : value
    }
    const location = upstream.headers["location"]
    if (location !== undefined && SAME_ORIGIN_PATH.test(location)) headers["location"] = location
    const contentType = upstream.headers["content-type"] ?? "application/octet-stream"
    const status = upstream.statusCode ?? 502
    // Not a status HTTP has: the server is no Jupyter (its session's code replaced it).
    if (status < 200 || status > 599) {
      upstream.destroy()
      return errorResponse(502, "bad_gateway", "The notebook session's server answered with no valid status")
    }
    // A window this session's pages open, or that opens them, gets no handle on the other.
    headers["cross-origin-opener-policy"] = "same-origin"
    return HttpServerResponse.stream(NodeStream.fromReadable(() => upstream, () => "the notebook session's server stopped mid-answer"), { status, headers, contentType })
  })

  const refuse = (socket: Duplex, status: number, code: string, message: string) => {
    const body = JSON.stringify({ code, message })
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? "Error"}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
  }

  /**
   * A kernel's channels over WebSocket: the credential checked at the gate as for HTTP (never a token
   * in the URL, which lands in logs); the upgrade sent to the session's server, and the two sockets
   * joined only once it answers 101 (any other answer is relayed and the connection closed, so no
   * later request can ride it past the gate); when the session ends (idle, stopped, killed), a close
   * frame saying why. Each connection is an audit row.
   */
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
      const url = request.url ?? ""
      const route = url.split("?")[0]!
      const record = (status: number, outcome: "success" | "refused", reason: string | null) =>
        audit
          .record(null, {
            ...auditRow(info, { route, durationMs: performance.now() - started, outcome, method: "GET", status, blockReason: reason, clientIp: info.client.ip, userAgent: headers["user-agent"] ?? null })
          })
          .pipe(Effect.catchAll((error) => Effect.logWarning("a notebook WebSocket's audit row could not be written", error.message)))
      if (!hostAllowed(headers)) {
        refuse(socket, 403, "forbidden", "The Host or Origin of this request is not allowed (set SP_NOTEBOOK_ORIGIN)")
        return yield* record(403, "refused", "forbidden")
      }
      const id = sessionOf(url, headers["host"])
      if (id === null || request.method !== "GET" || headers["upgrade"]?.toLowerCase() !== "websocket" || !KERNEL_CHANNELS.test(url)) {
        return refuse(socket, 404, "not_found", "A notebook session takes WebSocket upgrades for its kernels' channels only")
      }
      const target = yield* Effect.either(admitted(info, headers, id))
      if (target._tag === "Left") {
        const status = failureStatus(target.left._tag)
        refuse(socket, status, target.left.code, target.left.message)
        return yield* record(status, "refused", target.left.code)
      }
      const full = target.right.refusingWrites()
      if (full !== null) {
        refuse(socket, 507, "insufficient_storage", full)
        return yield* record(507, "refused", "insufficient_storage")
      }
      const release = hold(id)
      if (release === undefined) {
        refuse(socket, 429, "rate_limited", `A notebook session serves at most ${MAX_HELD_PER_SESSION} requests and connections at once`)
        return yield* record(429, "refused", "rate_limited")
      }
      join(request, socket, head, target.right, release)
      yield* record(101, "success", null)
    }).pipe(Effect.catchAllCause((cause) => Effect.zipRight(Effect.sync(() => socket.destroy()), Effect.logError("a notebook WebSocket failed", cause))))

  /** Sends the upgrade to the session's server; joins the sockets on its 101, relays any other answer and closes. */
  const join = (request: http.IncomingMessage, socket: Duplex, head: Buffer, target: NotebookTarget, releaseHold: () => void) => {
    const upstream = net.connect(target.socketPath)
    let endedBecause: string | undefined
    const release = target.holdSocket({
      end: (reason) => {
        endedBecause = reason
        upstream.destroy()
      }
    })
    const lines = [`GET ${request.url} HTTP/1.1`, ...Object.entries({ ...forwardedHeaders(request.headers, target), connection: "Upgrade", upgrade: "websocket" }).map(([name, value]) => `${name}: ${value}`)]
    // Nothing the client sends (the bytes that came with the upgrade request included) goes on until the server agrees to the upgrade.
    socket.pause()
    let answer = Buffer.alloc(0)
    const untilAnswered = (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk])
      const end = answer.indexOf("\r\n\r\n")
      if (end === -1) {
        if (answer.length > UPGRADE_HEAD_BYTES) upstream.destroy()
        return
      }
      upstream.off("data", untilAnswered)
      upstream.setTimeout(0)
      socket.write(answer)
      if (!/^HTTP\/1\.1 101 /.test(answer.subarray(0, end).toString("latin1"))) return upstream.destroy()
      if (head.length > 0) upstream.write(head)
      upstream.pipe(socket)
      socket.pipe(upstream)
      socket.resume()
    }
    upstream.setTimeout(UPSTREAM_IDLE_MS, () => upstream.destroy())
    upstream.on("connect", () => {
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`)
    })
    upstream.on("data", untilAnswered)
    upstream.on("close", () => {
      release()
      releaseHold()
      if (endedBecause !== undefined && socket.writable) socket.end(closeFrame(SESSION_ENDED, endedBecause))
      else socket.end()
    })
    upstream.on("error", () => upstream.destroy())
    socket.on("error", () => upstream.destroy())
    socket.on("close", () => upstream.destroy())
  }

  return {
    app,
    upgrade: (request: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      runFork(upgrade(request, socket, head))
    }
  } as const
})

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
