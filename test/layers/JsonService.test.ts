import { Effect, Logger, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { requestJson } from "../../layers/JsonService"
import { listenFake } from "../fakes/FakeServer"

describe("calls to third parties' JSON APIs", () => {
  it("log what a service says in an error without the credential it was sent, even when it echoes it (attack 31)", async () => {
    const token = "svc_token_9f8e7d6c5b4a"
    const echo = await listenFake(async (req, res) => {
      res.writeHead(400, { "content-type": "application/json" })
      res.end(JSON.stringify({ message: `bad request from ${req.headers.authorization}` }))
    })
    const logged: Array<string> = []
    const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logged.push(JSON.stringify(message))))
    try {
      const exit = await Effect.runPromiseExit(
        requestJson("echoing service", { method: "GET", url: `http://127.0.0.1:${echo.port}/x`, headers: { authorization: `Token ${token}` }, secrets: [token] }, Schema.Unknown).pipe(
          Effect.provide(capture)
        )
      )
      expect(exit._tag).toBe("Failure")
      expect(logged.join("\n")).toContain("bad request from Token [redacted]")
      expect(logged.join("\n")).not.toContain(token)
    } finally {
      await new Promise<void>((resolve) => echo.server.close(() => resolve()))
    }
  })
})
