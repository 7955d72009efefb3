import { HttpServerResponse } from "@effect/platform"
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
