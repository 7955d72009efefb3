import { createServer, IncomingMessage, type ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { HttpApp, HttpMiddleware, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { Clock, Deferred, Duration, Effect, Exit, Layer, Runtime } from "effect"
import type { ShutdownPlan } from "./ShutdownDeadline"

interface InFlight {
  readonly method: string
  readonly path: string
  readonly since: number
  readonly response: ServerResponse
  eventStream: boolean
}

const POLL = Duration.millis(50)
const CUT_LISTED = 20

const describeCut = (requests: ReadonlyArray<InFlight>, now: number) => {
  const listed = requests.slice(0, CUT_LISTED).map((r) => `${r.method} ${r.path} (running ${((now - r.since) / 1000).toFixed(1)} s)`)
  const more = requests.length > CUT_LISTED ? `, and ${requests.length - CUT_LISTED} more` : ""
  return `${listed.join(", ")}${more}`
}

/**
 * A lane in front of the app: true where it took the request, false to leave it to the app
 * untouched. A request it took may still go to the app with `handOff`, given the body it read.
 */
export type FrontLane = (request: IncomingMessage, response: ServerResponse, handOff: (request: IncomingMessage, body: Buffer) => void) => boolean

/** Takes a WebSocket upgrade (the socket is its own from then on). */
export type UpgradeHandler = (request: IncomingMessage, socket: Duplex, head: Buffer) => void

type Listener = (request: IncomingMessage, response: ServerResponse) => void

/**
 * Pipelined requests are served in turn: one queued behind another's response on its keep-alive
 * socket is served once that socket is its response's, and dropped if its client leaves first (no
 * one could read its answer). A queued response never closes when its socket does, so whatever
 * served it early would wait on it for good.
 */
const inTurn = (serve: Listener): Listener => (request, response) => {
  if (response.socket !== null) return serve(request, response)
  const turn = () => {
    request.off("close", dropped)
    serve(request, response)
  }
  const dropped = () => response.off("socket", turn)
  response.once("socket", turn)
  request.once("close", dropped)
}

/** The request again with the body a front lane read from it, for the app to read. */
const replayed = (request: IncomingMessage, body: Buffer) => {
  const copy = new IncomingMessage(request.socket)
  copy.method = request.method!
  copy.url = request.url!
  copy.headers = request.headers
  copy.rawHeaders = request.rawHeaders
  copy.httpVersion = request.httpVersion
  copy.httpVersionMajor = request.httpVersionMajor
  copy.httpVersionMinor = request.httpVersionMinor
  copy.complete = true
  copy.push(body)
  copy.push(null)
  return copy
}

/**
 * Serves `app` behind `middleware` (after `front`, where given) on a Node HTTP server that stops within the shutdown plan: when
 * its scope closes it stops accepting at once, closes idle keep-alive sockets, ends event streams
 * (their clients reconnect), answers what is in flight with `Connection: close`, and at `drainFor`
 * cuts the connections still open, naming the requests it cut; then it waits (up to `settleFor`)
 * for the cut requests to record how they ended, so the audit they write is flushed after them.
 */
export const drainingServer = (
  app: HttpApp.Default,
  middleware: (app: HttpApp.Default) => HttpApp.Default,
  options: {
    readonly port: number
    readonly host: string
    readonly shutdown: ShutdownPlan
    readonly front?: FrontLane
    readonly upgrade?: UpgradeHandler
    /** The setting that names the port, for the operator told it cannot be listened on. */
    readonly setting?: string
  }
) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const node = createServer()
      const inFlight = new Set<InFlight>()
      let draining = false

      // Innermost, so it sees the response as it will be written (after the pipeline's own step).
      const observed = (handled: HttpApp.Default, entry: InFlight) =>
        HttpApp.withPreResponseHandler(handled, (_, response) =>
          Effect.sync(() => {
            entry.eventStream = response.body._tag === "Stream" && (response.body.contentType ?? "").startsWith("text/event-stream")
            return draining ? HttpServerResponse.setHeader(response, "connection", "close") : response
          })
        )
      const tracked = (handled: HttpApp.Default): HttpApp.Default =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
          const entry: InFlight = {
            method: request.method,
            path: request.url.split("?")[0]!,
            since: Date.now(),
            response: NodeHttpServerRequest.toServerResponse(request),
            eventStream: false
          }
          inFlight.add(entry)
          return middleware(observed(handled, entry)).pipe(Effect.ensuring(Effect.sync(() => inFlight.delete(entry))))
        })

      yield* NodeHttpServer.make(() => node, { port: options.port, host: options.host }).pipe(
        Effect.mapError((error) =>
          options.setting === undefined ? error : new HttpServerError.ServeError({ cause: new Error(`${error.cause instanceof Error ? error.cause.message : String(error.cause)} (${options.setting}: free that port, or set ${options.setting} to another)`) })
        )
      )
      // No request span: nothing exports traces, and a span with its attributes per request is measurable CPU.
      const handler = yield* NodeHttpServer.makeHandler(app, tracked).pipe(Effect.locally(HttpMiddleware.currentTracerDisabledWhen, () => true))
      const front = options.front
      const runFork = Runtime.runFork(yield* Effect.runtime<never>())
      const handOff = (response: ServerResponse) => (request: IncomingMessage, body: Buffer) => handler(replayed(request, body), response)
      const listener =
        front === undefined
          ? handler
          : (request: IncomingMessage, response: ServerResponse) => {
              if (draining) response.shouldKeepAlive = false
              let taken = false
              try {
                taken = front(request, response, handOff(response))
              } catch (error) {
                // A fault of the front lane costs its request at most: the app answers it, or its connection ends when an answer had begun.
                runFork(Effect.logError("the front lane failed a request; the app answers it", error))
                if (response.headersSent) return void response.destroy()
              }
              if (!taken) return handler(request, response)
              // Taken and not yet answered (a body to read, a query to run): in flight until its response ends, as the app's are.
              if (response.writableFinished) return
              const entry: InFlight = { method: request.method ?? "", path: (request.url ?? "").split("?")[0]!, since: Date.now(), response, eventStream: false }
              inFlight.add(entry)
              response.once("close", () => inFlight.delete(entry))
            }
      node.on("request", inTurn(listener))
      const upgrade = options.upgrade
      if (upgrade !== undefined) {
        const upgradeListener = (request: IncomingMessage, socket: Duplex, head: Buffer) => (draining ? socket.destroy() : upgrade(request, socket, head))
        node.on("upgrade", upgradeListener)
        yield* Effect.addFinalizer(() => Effect.sync(() => node.off("upgrade", upgradeListener)))
      }
      // Registered before the drain below, so it runs after it: the handler is taken off a server that has drained.
      yield* Effect.addFinalizer(() => Effect.sync(() => node.off("request", listener)))

      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          draining = true
          // What is in flight answers with Connection: close (the app's requests say so in their headers as they are written).
          for (const request of inFlight) if (!request.response.headersSent) request.response.shouldKeepAlive = false
          const closed = yield* Deferred.make<void>()
          // Stops accepting; Node also closes the keep-alive sockets idle at this instant.
          node.close(() => Deferred.unsafeDone(closed, Exit.void))
          // Finalizers run uninterruptibly, so the waits end at their own time rather than by Effect.timeout.
          const settledBy = (until: number) =>
            Effect.gen(function* () {
              while (inFlight.size > 0 || !(yield* Deferred.isDone(closed))) {
                if ((yield* Clock.currentTimeMillis) >= until) return false
                node.closeIdleConnections()
                for (const request of inFlight) if (request.eventStream) request.response.destroy()
                yield* Effect.sleep(POLL)
              }
              return true
            })
          const started = yield* Clock.currentTimeMillis
          if (yield* settledBy(started + Duration.toMillis(options.shutdown.drainFor))) return
          const cut = [...inFlight]
          yield* Effect.logWarning(
            `shutdown: cut ${cut.length} request${cut.length === 1 ? "" : "s"} still in flight after ${Duration.format(options.shutdown.drainFor)}: ${describeCut(cut, Date.now())}`
          )
          node.closeAllConnections()
          yield* settledBy((yield* Clock.currentTimeMillis) + Duration.toMillis(options.shutdown.settleFor))
        })
      )
    })
  ).pipe(Layer.provide(NodeHttpServer.layerContext))
