import { randomUUID } from "node:crypto"
import { FileSystem, HttpApp, HttpBody, HttpIncomingMessage, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Chunk, Context, Effect, Exit, Option, Runtime, Stream } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { LOCAL_ORG } from "../domain/Ids"
import { Audit, changeRecord, closeChangeRecord, withChangeRecord } from "../services/Audit"
import type { ChangeRecord } from "../services/Audit"
import { Connections } from "../services/Connections"
import { Metrics } from "../services/Metrics"
import { REPORT_REQUEST_MAX_BYTES } from "../domain/Report"
import { GIT_FETCH_REQUEST_MAX_BYTES } from "../domain/WorkspaceProject"
import { UPLOAD_PART_BYTES } from "../domain/EvalUpload"
import { MAX_BODY_BYTES } from "../services/Posture"
import { announcesBody, declaresJson } from "./BodyHeaders"
import { resolveClientAddress } from "./ClientAddress"
import { allowedHostGuard, envelopeHeaders, notebookHostGuard } from "./Envelope"
import { auditRow, childQueryRows, newAuditDraft } from "../services/AuditDraft"
import { type RequestInfo, RequestState } from "./RequestState"

const REFUSALS = new Set([401, 403, 429])

/** What the pipeline reads of a request: either lane's. */
export interface RequestLine {
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string | undefined>>
}

// Reports' routes take their HTML documents (5 MiB, escaped as JSON), and a notebook's server the notebooks it saves; every other request 2 MiB.
const REPORT_WRITES = /^\/api\/reports(?:\/[^/?]*)?(?:\?|$)/
const NOTEBOOK_WRITES = /^\/notebook\//
// Git's two services take bodies of their own type and size: a push is counted against SP_GIT_PUSH_MAX_MB by the git route as it streams.
const GIT_SERVICE = /^\/git\/[^/?]+\.git\/(git-upload-pack|git-receive-pack)(?:\?|$)/
const gitServiceOf = (request: RequestLine) => (request.method === "POST" ? GIT_SERVICE.exec(request.url)?.[1] : undefined)
// An eval-set upload's part (the filesystem store's) is 64 MiB of bytes, streamed to disk by its route.
const UPLOAD_PART = /^\/api\/evals\/upload\/upl_[0-9a-f]{32}\/parts\/\d{1,5}$/
export const isUploadPart = (request: RequestLine) => request.method === "PUT" && UPLOAD_PART.test(request.url)
export const bodyLimitOf = (request: RequestLine) => {
  const git = gitServiceOf(request)
  if (git !== undefined) return git === "git-receive-pack" ? Number.MAX_SAFE_INTEGER : GIT_FETCH_REQUEST_MAX_BYTES
  if (isUploadPart(request)) return UPLOAD_PART_BYTES
  return ((request.method === "POST" || request.method === "PATCH") && REPORT_WRITES.test(request.url)) || ((request.method === "PUT" || request.method === "POST") && NOTEBOOK_WRITES.test(request.url))
    ? REPORT_REQUEST_MAX_BYTES
    : MAX_BODY_BYTES
}

const DEFAULT_ERRORS: Record<number, readonly [code: string, message: string]> = {
  400: ["invalid_request", "The request is not valid"],
  401: ["unauthenticated", "Authentication is required"],
  403: ["forbidden", "Forbidden"],
  404: ["not_found", "Not found"],
  405: ["method_not_allowed", "Method not allowed"],
  409: ["conflict", "Conflict"],
  413: ["payload_too_large", "The request body is too large"],
  429: ["rate_limited", "Too many requests"],
  503: ["unavailable", "The service is unavailable; try again shortly"]
}


const tooLarge = (limit: number) => errorResponse(413, "payload_too_large", `Request bodies are limited to ${limit} bytes`)

/**
 * A chunked body has no length to check up front; the body reader stops at the cap and destroys the
 * socket, which would lose the 413. Draining instead lets the client read the refusal. The reader
 * also destroys a body it read to the end, which is no refusal.
 */
const drainInsteadOfReset = (request: HttpServerRequest.HttpServerRequest, info: RequestInfo) => {
  const incoming = NodeHttpServerRequest.toIncomingMessage(request)
  const destroy = incoming.destroy
  incoming.destroy = function (this: typeof incoming, error?: Error) {
    if (this.readableEnded) return destroy.call(this, error)
    info.bodyTooLarge = true
    this.removeAllListeners("data")
    this.resume()
    return this
  }
}

/** The status a gate or service failure answers with on a route outside the HTTP API, by its kind. */
export const failureStatus = (tag: string) =>
  ({ NotFound: 404, Conflict: 409, InsufficientScope: 403, Forbidden: 403, RateLimited: 429, Unavailable: 503, InvalidRequest: 400, PayloadTooLarge: 413 })[tag] ?? 401

export const errorResponse = (status: number, code: string, message: string, extra: Record<string, unknown> = {}) =>
  HttpServerResponse.unsafeJson({ code, message, ...extra }, { status })

const readJson = (response: HttpServerResponse.HttpServerResponse): Record<string, unknown> | null => {
  if (response.body._tag !== "Uint8Array" || !response.body.contentType.includes("json")) return null
  const parsed: unknown = Option.getOrNull(Option.liftThrowable(JSON.parse)(new TextDecoder().decode(response.body.body)))
  return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null
}

/** A decode issue says what was expected, never the value sent: that may be a password or a token (in a URL, a union's other member). */
const withoutValue = (message: string) => message.replace(/, actual [\s\S]*$/, "")

/** Every error leaves as `{code, message, …}`: no class tags, stack traces or empty bodies. */
const normalizeError = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.status < 400) return response
  const body = readJson(response)
  const [fallbackCode, fallbackMessage] = DEFAULT_ERRORS[response.status] ??
    (response.status >= 500 ? ["internal_error", "Internal error"] : ["error", "The request failed"])
  const { _tag, code, message, issues, ...extra } = body ?? {}
  const decodeIssues =
    _tag === "HttpApiDecodeError" && Array.isArray(issues)
      ? issues.map((issue: { path?: ReadonlyArray<unknown>; message?: unknown }) => ({
          path: issue.path ?? [],
          message: withoutValue(String(issue.message))
        }))
      : null
  const normalized =
    typeof code === "string" && typeof message === "string"
      ? errorResponse(response.status, code, message, extra)
      : decodeIssues !== null
        ? errorResponse(
            response.status,
            "invalid_request",
            decodeIssues.map((i) => (i.path.length > 0 ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; "),
            { issues: decodeIssues }
          )
        : errorResponse(response.status, fallbackCode, fallbackMessage)
  const retryAfter = extra["retry_after_seconds"]
  return HttpServerResponse.setHeaders(normalized, {
    ...response.headers,
    "content-type": "application/json",
    ...(typeof retryAfter === "number" ? { "retry-after": String(retryAfter) } : {})
  })
}

/** A defect that is a response is the app's answer (the router's 404 for a path nothing serves, such as an OAuth discovery probe), not a failure. */
const diedUnanswered = (cause: Cause.Cause<unknown>) => Chunk.some(Cause.defects(cause), (defect) => !HttpServerResponse.isServerResponse(defect))

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"])

/** The type a body of this request must declare other than JSON: git's services' own, an upload part's bytes. */
const ownBodyType = (request: RequestLine) => {
  const git = gitServiceOf(request)
  return git !== undefined ? `application/x-${git}-request` : isUploadPart(request) ? "application/octet-stream" : undefined
}

/** A body that changes state must say it is JSON (or its route's own type), which a page cannot send to another origin without asking, as it can text/plain or a form. */
const undeclaredJson = (request: HttpServerRequest.HttpServerRequest) => {
  if (!STATE_CHANGING.has(request.method) || !announcesBody(request.headers)) return false
  const own = ownBodyType(request)
  return own === undefined ? !declaresJson(request.headers) : request.headers["content-type"] !== own
}

/**
 * The outer request path: host guard, body cap, request id, error envelope, security headers,
 * and the audit row, committed before the response leaves.
 */
export const makeRequestPipeline = Effect.gen(function* () {
  const config = yield* AppConfig
  const audit = yield* Audit
  const metrics = yield* Metrics
  const connections = yield* Connections
  const trustedProxies = new Set(config.trustedProxies)
  const gatewayHosts = allowedHostGuard(config)
  const notebookHosts = notebookHostGuard(config)
  const runFork = Runtime.runFork(yield* Effect.runtime<never>())

  /** A request's audit row: its draft, with where the request came from and how it ended. */
  const requestRow = (
    request: RequestLine,
    info: RequestInfo,
    status: number | null,
    outcome: "success" | "refused" | "error",
    blockReason: string | null,
    durationMs: number
  ) =>
    auditRow(info, {
      method: request.method,
      route: request.url.split("?")[0]!,
      status,
      outcome,
      blockReason,
      durationMs,
      clientIp: info.client.ip,
      userAgent: request.headers["user-agent"]?.slice(0, 512) ?? null
    })

  /** Whether the request ran SQL on a connection, whose dialect decides how its audit rows are redacted. */
  const ranSql = (info: RequestInfo) => info.principal !== null && info.connection !== null && (info.sql !== null || info.childQueries.size > 0)

  /** The dialect of the connection a request ran SQL on, for redacting its audit rows; null (every dialect's rules) when unknown. */
  const dialectOf = (info: RequestInfo) =>
    Effect.gen(function* () {
      if (info.dialect === undefined && ranSql(info)) info.dialect = yield* connections.dialectIn(info.principal!.orgId, info.connection!)
      return info.dialect ?? null
    })

  /** `dialectOf` from what this replica holds in memory; undefined where only `dialectOf` can tell. */
  const dialectNow = (info: RequestInfo) => {
    if (info.dialect !== undefined || !ranSql(info)) return info.dialect ?? null
    const target = connections.targetNow(info.principal!, info.connection!)
    if (target !== undefined) info.dialect = target.connection.db_type
    return target === undefined ? undefined : info.dialect!
  }

  /**
   * What a request's answer becomes, decided in memory: the envelope and headers, its metrics, and
   * the audit rows to commit before it leaves (none for an unauthenticated request that was not refused).
   */
  const concluded = (request: RequestLine, info: RequestInfo, started: number, raw: HttpServerResponse.HttpServerResponse) => {
    const headers = envelopeHeaders(info.requestId, request.url)
    // The MCP endpoint answers in JSON-RPC, whose error bodies its clients read as they are.
    // MCP answers in JSON-RPC, whose error bodies its clients read as they are; a notebook's server answers its own client.
    const answer = info.bodyTooLarge ? tooLarge(bodyLimitOf(request)) : request.url.startsWith("/mcp") || request.url.startsWith("/notebook/") ? raw : normalizeError(raw)
    const response = HttpServerResponse.setHeaders(answer, headers)
    const status = response.status
    const outcome = info.outcome ?? (status < 400 ? "success" : REFUSALS.has(status) || info.blockReason !== null ? "refused" : "error")
    const durationMs = performance.now() - started
    if (info.principal !== null) metrics.record(info.principal.orgId, outcome, durationMs)
    if (info.principal === null && !REFUSALS.has(status)) return { response, headers, rows: undefined }
    const body = outcome === "refused" ? readJson(response) : null
    const row = requestRow(request, info, status, outcome, info.blockReason ?? (typeof body?.["code"] === "string" ? body["code"] : null), durationMs)
    const children = info.childQueries.size === 0 ? [] : childQueryRows(info, requestRow(request, info, 200, "success", null, 0))
    return { response, headers, rows: [row, ...children] as const }
  }

  /** Runs just before the response is written: envelope, headers, then the audit row (503 if it cannot be committed). */
  const finish = (
    request: RequestLine,
    info: RequestInfo,
    started: number,
    raw: HttpServerResponse.HttpServerResponse,
    change: ChangeRecord | null = null
  ) =>
    Effect.gen(function* () {
      // The server calls this again with an error response when writing the first one fails (a client that left mid-stream): that request is already on record.
      if (info.answered) return raw
      info.answered = true
      // From here the request's own row is written here; a change committed from now on (work it forked) is already on record.
      const written = change === null ? null : closeChangeRecord(change)
      const { response, headers, rows } = concluded(request, info, started, raw)
      if (rows === undefined) return response
      const dialect = yield* dialectOf(info)
      const recorded = yield* Effect.either(audit.complete(written, dialect, ...rows))
      if (recorded._tag === "Left") return HttpServerResponse.setHeaders(errorResponse(503, "unavailable", recorded.left.message), headers)
      return response.body._tag === "Stream" && info.streamedRows ? auditStreamEnd(request, info, started, response, response.body) : response
    })

  /**
   * `finish` as plain callbacks, for a buffered answer whose audit row is a new row (no change
   * committed one) and whose connection's dialect is in memory: `done` gets the response once the
   * row is committed. False, with nothing done, where only `finish` can.
   */
  const finishNow = (
    request: RequestLine,
    info: RequestInfo,
    started: number,
    raw: HttpServerResponse.HttpServerResponse,
    change: ChangeRecord | null,
    done: (response: HttpServerResponse.HttpServerResponse) => void
  ) => {
    if (info.answered || raw.body._tag === "Stream" || (change !== null && change.state._tag === "written")) return false
    const dialect = dialectNow(info)
    if (dialect === undefined) return false
    info.answered = true
    if (change !== null) closeChangeRecord(change)
    const { response, headers, rows } = concluded(request, info, started, raw)
    if (rows === undefined) {
      done(response)
      return true
    }
    audit.append(dialect, rows, (exit) => {
      if (Exit.isSuccess(exit)) return done(response)
      const failure = Cause.failureOption(exit.cause)
      if (Option.isNone(failure) && !Cause.isInterruptedOnly(exit.cause)) runFork(Effect.logError("request failed", exit.cause))
      done(HttpServerResponse.setHeaders(errorResponse(503, "unavailable", Option.isSome(failure) ? failure.value.message : DEFAULT_ERRORS[503]![1]), headers))
    })
    return true
  }

  /**
   * A streamed body's rows leave after the request's audit row is committed; when they end, however
   * they end, a second row records what was sent (rows, completeness), as the executor reported it.
   */
  const auditStreamEnd = (
    request: RequestLine,
    info: RequestInfo,
    started: number,
    response: HttpServerResponse.HttpServerResponse,
    body: HttpBody.Stream
  ) => {
    const recordEnd = Effect.suspend(() => {
      const complete = typeof info.details?.["completeness"] === "string"
      const row = requestRow(request, info, response.status, complete ? "success" : "error", null, performance.now() - started)
      return audit.record(info.dialect ?? null, { ...row, event_type: `${info.eventType}_stream_end` })
    }).pipe(Effect.catchAll((error) => Effect.logWarning("the end of a streamed response could not be audited", error.message)))
    return HttpServerResponse.setBody(response, HttpBody.stream(Stream.ensuring(body.stream, recordEnd), body.contentType))
  }

  /** A request's draft as it arrives: its id, where it came from, nothing known yet. */
  const draftOf = (request: RequestLine, remoteAddress: string | null): RequestInfo => ({
    // Self-hosted has one org: every refusal, with or without a key, is its admins' to see.
    ...newAuditDraft(randomUUID(), "api", null, config.selfHosted ? LOCAL_ORG : null),
    client: resolveClientAddress(remoteAddress, request.headers, trustedProxies),
    streamedRows: false,
    bodyTooLarge: false,
    answered: false
  })

  /** The audit row a request that may change state commits with its first change (see `changeRecord`). */
  const changeRecordOf = (request: RequestLine, info: RequestInfo, started: number) =>
    STATE_CHANGING.has(request.method) ? changeRecord(() => requestRow(request, info, null, "success", null, performance.now() - started)) : null

  const wrapFor = (hostAllowed: (headers: Readonly<Record<string, string | undefined>>) => boolean, setting: string) => (app: HttpApp.Default): HttpApp.Default =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const started = performance.now()
      const info = draftOf(request, Option.getOrNull(request.remoteAddress))
      if (!hostAllowed(request.headers)) {
        const refused = errorResponse(403, "forbidden", `The Host or Origin of this request is not allowed (set ${setting})`)
        return yield* finish(request, info, started, refused)
      }
      const bodyLimit = bodyLimitOf(request)
      if (Number(request.headers["content-length"] ?? 0) > bodyLimit) return yield* finish(request, info, started, tooLarge(bodyLimit))
      if (undeclaredJson(request)) {
        const own = ownBodyType(request)
        const refused = errorResponse(415, "unsupported_media_type", own === undefined ? "Send the request body as JSON with Content-Type: application/json" : `Send this request's body with Content-Type: ${own}`)
        return yield* finish(request, info, started, refused)
      }
      if (request.headers["transfer-encoding"] !== undefined) drainInsteadOfReset(request, info)
      const change = changeRecordOf(request, info, started)
      return yield* app.pipe(
        HttpApp.withPreResponseHandler((_, response) => finish(request, info, started, response, change)),
        // One context change for the request's state, body cap and change record (each provideService is a region of its own).
        Effect.mapInputContext((context: Context.Context<HttpServerRequest.HttpServerRequest>) => {
          const withState = Context.add(Context.add(context, RequestState, info), HttpIncomingMessage.MaxBodySize, Option.some(FileSystem.Size(bodyLimit)))
          return change === null ? withState : withChangeRecord(withState, change)
        }),
        Effect.tapErrorCause((cause) => (diedUnanswered(cause) ? Effect.logError("request failed", cause) : Effect.void))
      )
    })

  /** The pipeline of the API's and the web app's origins. */
  const wrap = wrapFor(gatewayHosts, "SP_ALLOWED_HOSTS")
  /** The same, on the notebook origin, whose Host and Origin are its own. */
  const wrapNotebooks = wrapFor(notebookHosts, "SP_NOTEBOOK_ORIGIN")

  return { wrap, wrapNotebooks, draftOf, changeRecordOf, finish, finishNow } as const
})

export type RequestPipeline = Effect.Effect.Success<typeof makeRequestPipeline>
