import * as net from "node:net"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Logger, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { drainingServer, type FrontLane } from "../../layers/DrainingServer"
import { shutdownPlan } from "../../layers/ShutdownDeadline"
import { freePort } from "../support/Gateway"
import { request } from "../support/Http"

describe("the server's front lane: requests it answers, leaves, or fails", () => {
  let url: string
  let runtime: ManagedRuntime.ManagedRuntime<never, unknown>
  const logged: Array<string> = []

  beforeAll(async () => {
    const port = await freePort()
    url = `http://127.0.0.1:${port}`
    const app = Effect.succeed(HttpServerResponse.text("from the app"))
    const front: FrontLane = (req, res) => {
      if (req.url === "/fault") throw new Error("a fault of the front lane")
      if (req.url !== "/front") return false
      res.end("from the front")
      return true
    }
    const server = drainingServer(app, (handled) => handled, { port, host: "127.0.0.1", shutdown: shutdownPlan(2), front })
    const keep = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logged.push(String(message))))
    runtime = ManagedRuntime.make(Layer.provide(server, keep))
    await runtime.runPromise(Effect.void)
  })
  afterAll(async () => {
    await runtime?.dispose()
  })

  it("answers what the front lane answers, hands the rest to the app, and a front lane that throws costs only that it answers through the app", async () => {
    expect((await request(url, "/front")).text).toBe("from the front")
    expect((await request(url, "/other")).text).toBe("from the app")
    const fault = await request(url, "/fault")
    expect([fault.status, fault.text]).toEqual([200, "from the app"])
    expect(logged.join("\n")).toMatch(/the front lane failed a request/)
    // The server goes on.
    expect((await request(url, "/front")).text).toBe("from the front")
  })
})

describe("pipelined requests on one keep-alive socket whose client leaves (a response queued behind another never closes)", () => {
  /** On one socket: `/slow` (answered after 1 s), then `second`, pipelined; the client hangs up at 300 ms. */
  const pipelineAndLeave = (port: number, second: string) =>
    new Promise<void>((resolve) => {
      const socket = net.connect(port, "127.0.0.1")
      socket.on("error", () => resolve())
      socket.on("connect", () => {
        socket.write(`GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET ${second} HTTP/1.1\r\nHost: x\r\n\r\n`)
        setTimeout(() => {
          socket.destroy()
          resolve()
        }, 300)
      })
    })

  it("answers pipelined requests in order, each in its turn, to a client that stays", async () => {
    const port = await freePort()
    const app = Effect.map(HttpServerRequest.HttpServerRequest, (request) => HttpServerResponse.text(`app ${request.url};`))
    const front: FrontLane = (req, res) => {
      if (req.url !== "/front") return false
      setTimeout(() => res.end("front /front;"), 50)
      return true
    }
    const runtime = ManagedRuntime.make(drainingServer(app, (handled) => handled, { port, host: "127.0.0.1", shutdown: shutdownPlan(2), front }))
    await runtime.runPromise(Effect.void)
    const received = await new Promise<string>((resolve) => {
      let text = ""
      const socket = net.connect(port, "127.0.0.1", () => socket.write(["/a", "/front", "/b"].map((path) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`).join("")))
      socket.on("data", (chunk) => {
        text += chunk.toString()
        if (text.includes("app /b;")) socket.end(() => resolve(text))
      })
    })
    await runtime.dispose()
    expect(received.match(/(app|front) \/\w+;/g)).toEqual(["app /a;", "front /front;", "app /b;"])
  })

  for (const second of ["/app", "/front"] as const) {
    it(`leaves nothing in flight when the queued one is the ${second === "/app" ? "app's" : "front lane's"}: the server stops at once, and never serves it`, async () => {
      const port = await freePort()
      const served: Array<string> = []
      const app = Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        served.push(request.url)
        if (request.url === "/slow") yield* Effect.sleep("1 second")
        return HttpServerResponse.text("from the app")
        // Interruptible, as the router runs a route: its client leaving ends it.
      }).pipe(Effect.interruptible)
      const front: FrontLane = (req, res) => {
        if (req.url !== "/front") return false
        served.push("/front")
        setTimeout(() => res.end("from the front"), 50)
        return true
      }
      const logged: Array<string> = []
      const keep = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logged.push(String(message))))
      const runtime = ManagedRuntime.make(Layer.provide(drainingServer(app, (handled) => handled, { port, host: "127.0.0.1", shutdown: shutdownPlan(4), front }), keep))
      await runtime.runPromise(Effect.void)
      await pipelineAndLeave(port, second)
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      const started = Date.now()
      await runtime.dispose()
      expect(Date.now() - started).toBeLessThan(1_000)
      expect(logged.join("\n")).not.toMatch(/cut/)
      // Its client left before its turn: no one could read its answer.
      expect(served).toEqual(["/slow"])
    })
  }
})
