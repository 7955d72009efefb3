import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs/promises"
import { PassThrough, type Readable, Transform } from "node:stream"
import * as zlib from "node:zlib"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Deferred, Effect, Exit, Option } from "effect"
import { GitRepositories } from "../../layers/GitRepositories"
import { Unauthenticated } from "../domain/Errors"
import { principalLabel } from "../domain/Principal"
import { GIT_FETCH_REQUEST_MAX_BYTES } from "../domain/WorkspaceProject"
import { AppConfig } from "../../layers/AppConfig"
import { credentialOf, Gate } from "../gate/Gate"
import { errorResponse } from "../gate/RequestPipeline"
import { RequestState } from "../gate/RequestState"
import { Authenticator } from "../services/Authenticator"
import { WorkspaceProjects } from "../services/WorkspaceProjects"

// Smart HTTP only: ref discovery and the two services. Nothing else of a repository (its files, its config) is served.
const GIT_PATH = /^\/git\/(wsp_[0-9a-f]{32})\.git(\/info\/refs|\/git-upload-pack|\/git-receive-pack)(?:\?(.*))?$/
const SERVICES = new Set(["git-upload-pack", "git-receive-pack"])
const GIT_PROTOCOL = /^[A-Za-z0-9=:._-]{1,200}$/
const BASIC = /^basic\s+([A-Za-z0-9+/=]+)$/i
const CHALLENGE = { "www-authenticate": 'Basic realm="Sluice git: any user name, an API key as the password"' }
// A push's answer (its refs' statuses and hook messages) is small: held whole so its audit row can say what the push did.
const PUSH_ANSWER_MAX_BYTES = 4 * 1024 * 1024
const CGI_HEAD_MAX_BYTES = 16 * 1024

/** What a git request asks for: ref discovery (for a service), a fetch or a push. */
interface GitRequest {
  readonly repository: string
  readonly pathTail: string
  readonly query: string
  readonly kind: "refs" | "fetch" | "push"
  readonly service: "git-upload-pack" | "git-receive-pack"
}

const parseGitRequest = (method: string, url: string, contentType: string | undefined): GitRequest | string => {
  const match = GIT_PATH.exec(url)
  if (match === null) return "This is a workspace project's git endpoint: /git/{id}.git over smart HTTP (clone, fetch, pull, push)"
  const [, repository = "", pathTail = "", query = ""] = match
  if (pathTail === "/info/refs") {
    const service = /^service=(git-upload-pack|git-receive-pack)$/.exec(query)?.[1]
    if (method !== "GET" || service === undefined) return "Ref discovery is GET /info/refs?service=git-upload-pack or git-receive-pack (smart HTTP only)"
    return { repository, pathTail, query, kind: "refs", service: service as GitRequest["service"] }
  }
  const service = pathTail.slice(1) as GitRequest["service"]
  // The type a page cannot send to another origin without asking: a browser holding a typed-in password cannot be made to push.
  if (method !== "POST" || !SERVICES.has(service) || contentType !== `application/x-${service}-request`) return `${service} takes POST with Content-Type application/x-${service}-request`
  return { repository, pathTail, query: "", kind: service === "git-receive-pack" ? "push" : "fetch", service }
}

/** The API key a git client sends: HTTP Basic's password (its user name is anything), or the gateway's usual headers. */
const gitCredential = (headers: Readonly<Record<string, string | undefined>>): string | null => {
  const basic = BASIC.exec(headers["authorization"]?.trim() ?? "")
  if (basic === null) return credentialOf(headers) ?? null
  const decoded = Buffer.from(basic[1]!, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon === -1 ? null : decoded.slice(colon + 1)
}

/** The request body as `git http-backend` takes it: inflated when the client sent it gzipped, counted against `limit` as it streams. */
const bodyOf = (incoming: Readable, encoding: string | undefined, limit: number, onRefused: (why: "too_large" | "corrupt") => void): Readable => {
  let raw = 0
  let inflated = 0
  const counter = (count: (n: number) => number) =>
    new Transform({
      transform(chunk: Buffer, _, done) {
        if (count(chunk.length) > limit) {
          onRefused("too_large")
          return done()
        }
        done(null, chunk)
      }
    })
  const counted = incoming.pipe(counter((n) => (raw += n)))
  if (encoding !== "gzip") return counted
  const gunzip = zlib.createGunzip()
  gunzip.on("error", () => onRefused("corrupt"))
  return counted.pipe(gunzip).pipe(counter((n) => (inflated += n)))
}

interface CgiHead {
  readonly status: number
  readonly headers: Record<string, string>
  readonly rest: Buffer
}

/** A CGI answer's head (`Status:` and headers up to the blank line), and what of the body came with it; null if there is none. */
const parseCgiHead = (bytes: Buffer): CgiHead | null => {
  const end = bytes.indexOf("\r\n\r\n")
  if (end === -1) return null
  let status = 200
  const headers: Record<string, string> = {}
  for (const line of bytes.subarray(0, end).toString("latin1").split("\r\n")) {
    const colon = line.indexOf(":")
    if (colon === -1) continue
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    if (name === "status") status = Number.parseInt(value, 10) || 500
    else if (name === "content-type" || name === "cache-control" || name === "expires" || name === "pragma") headers[name] = value
  }
  return { status, headers, rest: bytes.subarray(end + 4) }
}

/** Reads `stdout` up to the CGI head; the stream is paused after it. */
const readHead = (stdout: Readable) =>
  Effect.async<CgiHead | null>((resume) => {
    let held = Buffer.alloc(0)
    const onData = (chunk: Buffer) => {
      held = Buffer.concat([held, chunk])
      const head = parseCgiHead(held)
      if (head === null && held.length <= CGI_HEAD_MAX_BYTES) return
      stop()
      stdout.pause()
      resume(Effect.succeed(head))
    }
    const onEnd = () => {
      stop()
      resume(Effect.succeed(parseCgiHead(held)))
    }
    const stop = () => {
      stdout.off("data", onData)
      stdout.off("end", onEnd)
    }
    stdout.on("data", onData)
    stdout.once("end", onEnd)
    return Effect.sync(stop)
  })

/** All of `stdout` (at most `max` bytes, else null) once the process has exited. */
const readAll = (child: ChildProcess, max: number) =>
  Effect.async<Buffer | null>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    child.stdout!.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > max) child.kill("SIGKILL")
      else chunks.push(chunk)
    })
    child.once("close", () => resume(Effect.succeed(size > max ? null : Buffer.concat(chunks))))
    child.once("error", () => resume(Effect.succeed(null)))
  })

/** What a push's hooks reported: the refs it updated (old → new) and those refused as protected. */
const readPushReport = (file: string) =>
  Effect.promise(async () => {
    const text = await fs.readFile(file, "utf8").catch(() => "")
    await fs.rm(file, { force: true })
    const refs = text
      .split("\n")
      .map((line) => line.split(" "))
      .filter((parts) => parts.length === 4)
      .map(([what, old, next, ref]) => ({ ref: ref!, old: old!, new: next!, result: what === "updated" ? "updated" : "refused" }))
    return refs
  })

/**
 * `/git/{project_id}.git/…`: a workspace project's repository over git's smart HTTP protocol (v0
 * and v2), served by git's own `git http-backend`, both directions streamed. The password of HTTP
 * Basic is an API key, checked at the gate: read scope to clone and fetch, write to push; another
 * organization's project is not found. Pushes are capped (SP_GIT_PUSH_MAX_MB, 500) as they stream; protected
 * branches are refused by the repository's hook, on a `remote:` line. Each request is an audit row;
 * a push's says which refs moved (old → new) or were refused.
 */
export const GitRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const gate = yield* Gate
    const authenticator = yield* Authenticator
    const projects = yield* WorkspaceProjects
    const repositories = yield* GitRepositories
    const pushMaxBytes = (yield* AppConfig).gitPushMaxMb * 1_000_000

    const handle = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const state = yield* Effect.serviceOption(RequestState)
      if (Option.isNone(state)) return errorResponse(500, "internal_error", "Internal error")
      const info = state.value
      info.eventType = "git"
      const git = parseGitRequest(request.method, request.url, request.headers["content-type"])
      if (typeof git === "string") return errorResponse(404, "not_found", git)
      const encoding = request.headers["content-encoding"]
      if (encoding !== undefined && encoding !== "gzip") return errorResponse(415, "unsupported_media_type", "A git request body is sent as it is or gzipped")
      const gitProtocol = request.headers["git-protocol"]
      if (gitProtocol !== undefined && !GIT_PROTOCOL.test(gitProtocol)) return errorResponse(400, "invalid_request", "Git-Protocol is not one git sends")
      info.eventType = git.kind === "refs" ? "git_refs" : git.kind === "push" ? "git_push" : "git_fetch"
      info.details = { project_id: git.repository, service: git.service }

      const token = gitCredential(request.headers)
      const admitted = yield* Effect.either(
        gate.admitWith(
          info,
          "general",
          token === null
            ? Effect.fail(new Unauthenticated({ message: "Git needs an API key: give any user name and the key as the password" }))
            : authenticator.authenticate({ token, localPeer: info.client.local, surface: "git" })
        )
      )
      if (admitted._tag === "Left") {
        const refusal = admitted.left
        const status = refusal._tag === "RateLimited" ? 429 : refusal._tag === "Unavailable" ? 503 : 401
        return HttpServerResponse.setHeaders(errorResponse(status, refusal.code, refusal.message), status === 401 ? CHALLENGE : {})
      }
      const principal = admitted.right
      const pushing = git.service === "git-receive-pack"
      const allowed = yield* Effect.either(gate.authorize(principal, pushing ? "write" : "read", pushing ? "Pushing to a workspace project" : "Cloning or fetching a workspace project", true))
      if (allowed._tag === "Left") return errorResponse(allowed.left._tag === "RateLimited" ? 429 : 403, allowed.left.code, allowed.left.message)
      const found = yield* Effect.either(projects.get(principal, git.repository))
      if (found._tag === "Left") {
        return found.left._tag === "NotFound" ? errorResponse(404, "not_found", "There is no such workspace project") : errorResponse(503, found.left.code, found.left.message)
      }
      const project = found.right
      if (pushing && project.status === "archived") return errorResponse(403, "forbidden", `The workspace project ${project.name} is archived: it can be cloned, not pushed to`)

      const limit = pushing ? pushMaxBytes : GIT_FETCH_REQUEST_MAX_BYTES
      const tooLargeAnswer = () => errorResponse(413, "payload_too_large", pushing ? `A push sends at most ${pushMaxBytes / 1_000_000} MB (SP_GIT_PUSH_MAX_MB)` : `A fetch's request sends at most ${limit} bytes`)
      const refusedAnswer = (why: "too_large" | "corrupt") => (why === "too_large" ? tooLargeAnswer() : errorResponse(400, "invalid_request", "The request body is not valid gzip"))
      if (Number(request.headers["content-length"] ?? 0) > limit) return tooLargeAnswer()
      const pushReport = git.kind === "push" ? repositories.pushReportFile() : null
      const child = repositories.backend({
        repository: git.repository,
        pathTail: git.pathTail,
        method: request.method,
        query: git.query,
        contentType: request.headers["content-type"],
        gitProtocol,
        remoteUser: principalLabel(principal),
        remoteAddress: info.client.ip ?? "",
        protectedRefs: project.protected_branches.map((branch) => `refs/heads/${branch}`),
        pushReport
      })
      child.stderr!.resume()
      child.on("error", () => child.kill("SIGKILL"))
      const response = NodeHttpServerRequest.toServerResponse(request)
      // A client that leaves takes the backend with it.
      response.once("close", () => {
        if (child.exitCode === null) child.kill("SIGTERM")
      })
      let refused: "too_large" | "corrupt" | null = null
      // Settled once the body has all gone to git, or been refused: a gzip error or the cap can come after git has begun to answer.
      let bodySettled: Effect.Effect<void> = Effect.void
      if (request.method === "POST") {
        const incoming = NodeHttpServerRequest.toIncomingMessage(request)
        const settled = yield* Deferred.make<void>()
        const body = bodyOf(incoming, encoding, limit, (why) => {
          Deferred.unsafeDone(settled, Exit.void)
          if (refused !== null) return
          refused = why
          incoming.unpipe()
          incoming.resume()
          child.kill("SIGTERM")
        })
        // Its end is the end of what went to git (inflated, counted: a gzip error comes after the raw body has all arrived), git's
        // end (having read what it would), or its client leaving.
        body.once("end", () => Deferred.unsafeDone(settled, Exit.void))
        body.once("error", () => Deferred.unsafeDone(settled, Exit.void))
        child.once("exit", () => Deferred.unsafeDone(settled, Exit.void))
        response.once("close", () => Deferred.unsafeDone(settled, Exit.void))
        body.pipe(child.stdin!)
        child.stdin!.on("error", () => undefined)
        bodySettled = Deferred.await(settled)
      } else child.stdin!.end()

      if (git.kind === "push") {
        const answer = yield* readAll(child, PUSH_ANSWER_MAX_BYTES)
        const refs = yield* readPushReport(pushReport!)
        yield* bodySettled
        if (refused !== null) return refusedAnswer(refused)
        const head = answer === null ? null : parseCgiHead(answer)
        if (head === null) return errorResponse(502, "bad_gateway", "git could not take the push")
        info.details = { ...info.details, refs }
        if (refs.some((ref) => ref.result === "refused")) {
          info.outcome = "refused"
          info.blockReason = "protected_branch"
        }
        return HttpServerResponse.uint8Array(head.rest, { status: head.status, headers: head.headers, contentType: head.headers["content-type"] ?? "application/octet-stream" })
      }
      const head = yield* readHead(child.stdout!)
      yield* bodySettled
      if (refused !== null) return refusedAnswer(refused)
      if (head === null) {
        child.kill("SIGKILL")
        return errorResponse(502, "bad_gateway", "git did not answer")
      }
      const body = new PassThrough()
      body.write(head.rest)
      child.stdout!.pipe(body)
      child.stdout!.resume()
      return HttpServerResponse.stream(NodeStream.fromReadable(() => body, () => "git stopped mid-answer"), {
        status: head.status,
        headers: head.headers,
        contentType: head.headers["content-type"] ?? "application/octet-stream"
      })
    })

    yield* router.all("/git/*", handle)
  })
)
