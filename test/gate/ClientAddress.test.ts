import { describe, expect, it } from "vitest"
import { resolveClientAddress } from "../../src/gate/ClientAddress"

const none = new Set<string>()
const proxy = new Set(["10.0.0.5"])

describe("resolveClientAddress", () => {
  it("a loopback peer with no proxy headers is local", () => {
    expect(resolveClientAddress("127.0.0.1", {}, none)).toEqual({ ip: "127.0.0.1", local: true })
    expect(resolveClientAddress("::1", {}, none)).toEqual({ ip: "::1", local: true })
    expect(resolveClientAddress("::ffff:127.0.0.1", {}, none)).toEqual({ ip: "127.0.0.1", local: true })
  })

  it("X-Forwarded-For from an untrusted peer is ignored for the address and voids local access", () => {
    expect(resolveClientAddress("127.0.0.1", { "x-forwarded-for": "127.0.0.1" }, none)).toEqual({ ip: "127.0.0.1", local: false })
    expect(resolveClientAddress("127.0.0.1", { forwarded: "for=1.2.3.4" }, none)).toEqual({ ip: "127.0.0.1", local: false })
    expect(resolveClientAddress("203.0.113.9", { "x-forwarded-for": "127.0.0.1" }, none)).toEqual({ ip: "203.0.113.9", local: false })
  })

  it("a trusted proxy's X-Forwarded-For is read right to left past trusted hops", () => {
    expect(resolveClientAddress("10.0.0.5", { "x-forwarded-for": "1.1.1.1, 203.0.113.7" }, proxy)).toEqual({ ip: "203.0.113.7", local: false })
    expect(resolveClientAddress("10.0.0.5", { "x-forwarded-for": "203.0.113.7, 10.0.0.5" }, proxy)).toEqual({ ip: "203.0.113.7", local: false })
    expect(resolveClientAddress("10.0.0.5", {}, proxy)).toEqual({ ip: "10.0.0.5", local: false })
  })

  it("a remote peer is never local", () => {
    expect(resolveClientAddress("192.0.2.1", {}, none).local).toBe(false)
    expect(resolveClientAddress(null, {}, none)).toEqual({ ip: null, local: false })
  })
})
