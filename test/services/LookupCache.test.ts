import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Option } from "effect"
import { makeLookupCache } from "../../src/services/LookupCache"

/** A cache over a lookup that counts its calls and, while `gate` is set, waits for it. */
const counted = (options: { ttlMs?: number; capacity?: number; fails?: (key: string, calls: ReadonlyArray<string>) => boolean } = {}) =>
  Effect.gen(function* () {
    const calls: Array<string> = []
    let gate: Deferred.Deferred<void> | undefined
    const cache = yield* makeLookupCache({
      ttlMs: options.ttlMs ?? 60_000,
      capacity: options.capacity ?? 100,
      lookup: (key: string) =>
        Effect.gen(function* () {
          const call = calls.push(key)
          if (gate !== undefined) yield* Deferred.await(gate)
          return options.fails?.(key, calls) === true ? yield* Effect.fail(`no ${key}`) : `value of ${key}#${call}`
        })
    })
    return {
      cache,
      calls,
      hold: Effect.map(Deferred.make<void>(), (d) => void (gate = d)),
      release: Effect.suspend(() => (gate === undefined ? Effect.void : Effect.asVoid(Deferred.succeed(gate, undefined)))).pipe(Effect.tap(() => (gate = undefined)))
    }
  })

describe("LookupCache: per-request lookups kept in plain maps", () => {
  it.scoped("keeps a value for its time to live, then looks it up again; peek reads without looking up", () =>
    Effect.gen(function* () {
      const { cache, calls } = yield* counted({ ttlMs: 100 })
      expect(cache.peek("a")).toBeUndefined()
      expect(yield* cache.get("a")).toBe("value of a#1")
      expect(yield* cache.get("a")).toBe("value of a#1")
      expect(cache.peek("a")).toBe("value of a#1")
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 150)))
      expect(cache.peek("a")).toBeUndefined()
      expect(yield* cache.get("a")).toBe("value of a#2")
      expect(calls).toEqual(["a", "a"])
    })
  )

  it.scoped("does not keep a failed lookup; one effect run twice (a retry) looks up each time", () =>
    Effect.gen(function* () {
      const { cache, calls } = yield* counted({ fails: (key, calls) => key === "gone" || (key === "flaky" && calls.length === 3) })
      expect(yield* Effect.flip(cache.get("gone"))).toBe("no gone")
      expect(yield* Effect.flip(cache.get("gone"))).toBe("no gone")
      const flaky = cache.get("flaky")
      expect(yield* Effect.flip(flaky)).toBe("no flaky")
      expect(yield* flaky).toBe("value of flaky#4")
      expect(calls).toEqual(["gone", "gone", "flaky", "flaky"])
    })
  )

  it.scoped("callers of one key share one lookup, which interrupting the caller that started it does not stop", () =>
    Effect.gen(function* () {
      const { cache, calls, hold, release } = yield* counted()
      yield* hold
      const starter = yield* Effect.fork(cache.get("k"))
      yield* Effect.yieldNow()
      const others = yield* Effect.forEach([1, 2, 3], () => Effect.fork(cache.get("k")))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(starter)
      yield* release
      expect(yield* Effect.forEach(others, Fiber.join)).toEqual(["value of k#1", "value of k#1", "value of k#1"])
      expect(calls).toEqual(["k"])
    })
  )

  it.scoped("a lookup under way when its key is invalidated (a key deleted) answers its callers but keeps nothing, and callers after it look up again", () =>
    Effect.gen(function* () {
      const { cache, calls, hold, release } = yield* counted()
      for (const invalidate of [cache.invalidate("k"), cache.invalidateAll]) {
        calls.length = 0
        yield* hold
        const before = yield* Effect.fork(cache.get("k"))
        yield* Effect.yieldNow()
        yield* invalidate
        const after = yield* Effect.fork(cache.get("k"))
        yield* Effect.yieldNow()
        yield* release
        expect([yield* Fiber.join(before), yield* Fiber.join(after)]).toEqual(["value of k#1", "value of k#2"])
        expect(cache.peek("k")).toBe("value of k#2")
        expect(calls).toEqual(["k", "k"])
        yield* cache.invalidateAll
        expect(cache.peek("k")).toBeUndefined()
      }
    })
  )

  it.scoped("a lookup runs with the services the cache was made with, not those of the caller that started it", () =>
    Effect.gen(function* () {
      class Caller extends Context.Tag("test/Caller")<Caller, string>() {}
      const cache = yield* makeLookupCache({ ttlMs: 60_000, capacity: 10, lookup: () => Effect.map(Effect.serviceOption(Caller), Option.getOrElse(() => "no caller")) })
      expect(yield* cache.get("k").pipe(Effect.provideService(Caller, "a tenant's transaction"))).toBe("no caller")
    })
  )

  it.scoped("holds at most its capacity, the oldest going first", () =>
    Effect.gen(function* () {
      const { cache } = yield* counted({ capacity: 2 })
      yield* Effect.forEach(["a", "b", "c"], (key) => cache.get(key))
      expect(["a", "b", "c"].map((key) => cache.peek(key) !== undefined)).toEqual([false, true, true])
    })
  )

  it("waiters are interrupted, not left waiting, when the cache's scope closes under a lookup", async () => {
    const exit = await Effect.runPromiseExit(
      Effect.gen(function* () {
        const { cache, hold } = yield* Effect.scoped(Effect.gen(function* () {
          const made = yield* counted()
          yield* made.hold
          return made
        }))
        yield* hold
        return yield* cache.get("k").pipe(Effect.timeout("2 seconds"))
      })
    )
    expect(Exit.isInterrupted(exit) || (Exit.isFailure(exit) && String(exit.cause).includes("Interrupt"))).toBe(true)
  })
})
