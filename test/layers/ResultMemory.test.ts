import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { ResultMemory } from "../../layers/ResultMemory"

const KIB = 1024
const LIMIT = 1024 * KIB

const memory = ResultMemory.Default.pipe(Layer.provide(Layer.succeed(AppConfig, { resultMemoryBytes: LIMIT } as unknown as AppConfig)))

/** A hold taken in a scope of its own, closed by the caller. */
const holdIn = (cap: number, waitMs: number) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const hold = yield* Scope.extend(ResultMemory.pipe(Effect.flatMap((m) => m.hold(cap, waitMs))), scope)
    return { hold: Option.getOrThrow(hold), close: Scope.close(scope, Exit.void) }
  })

/** One result holding all of the memory. */
const fullMemory = Effect.tap(holdIn(LIMIT, 0), (full) => expect(full.hold.take(LIMIT)).toBe(true))

describe("ResultMemory: the bytes buffered results may hold at once (issue 17 item 2)", () => {
  it.live("a result takes bytes as it is read, refused past its cap or past the memory left; its share is given back when its scope closes or it is refused", () =>
    Effect.gen(function* () {
      const results = yield* ResultMemory
      const a = yield* holdIn(600 * KIB, 0)
      expect(a.hold.take(500 * KIB)).toBe(true)
      expect(a.hold.take(200 * KIB)).toBe(false)
      expect(a.hold.refusedBy()).toBe("cap")
      // Refused: what it held is free at once, before its scope closes.
      expect(results.inUse()).toBe(0)
      const b = yield* holdIn(LIMIT, 0)
      const c = yield* holdIn(LIMIT, 0)
      expect(b.hold.take(700 * KIB)).toBe(true)
      expect(c.hold.take(400 * KIB)).toBe(false)
      expect(c.hold.refusedBy()).toBe("memory")
      // Settled at its size as JSON: grows, and may not pass the memory either.
      expect(b.hold.settle(900 * KIB)).toBe(true)
      yield* b.close
      yield* c.close
      yield* a.close
      expect(results.inUse()).toBe(0)
    }).pipe(Effect.provide(memory))
  )

  it.live("a result waits in line while the memory is full, is admitted in turn as it frees, and refused after its wait", () =>
    Effect.gen(function* () {
      const results = yield* ResultMemory
      const full = yield* fullMemory
      const waiting = yield* Effect.fork(holdIn(LIMIT, 2_000))
      const refused = yield* Effect.scoped(results.hold(LIMIT, 50))
      expect(Option.isNone(refused)).toBe(true)
      yield* Effect.sleep(100)
      expect(waiting.unsafePoll()).toBeNull()
      yield* full.close
      const admitted = yield* Fiber.join(waiting)
      expect(admitted.hold.take(10 * KIB)).toBe(true)
      yield* admitted.close
      expect(results.inUse()).toBe(0)
    }).pipe(Effect.provide(memory))
  )

  it.live("a caller that leaves while waiting takes nothing with it", () =>
    Effect.gen(function* () {
      const results = yield* ResultMemory
      const full = yield* fullMemory
      const waiting = yield* Effect.fork(Effect.scoped(results.hold(LIMIT, 5_000)))
      yield* Effect.sleep(50)
      yield* Fiber.interrupt(waiting)
      yield* full.close
      expect(results.inUse()).toBe(0)
    }).pipe(Effect.provide(memory))
  )

  it.live("a hold whose scope closes while it waits in line takes nothing at its turn (a request answered before its result was read)", () =>
    Effect.gen(function* () {
      const results = yield* ResultMemory
      const full = yield* fullMemory
      const scope = yield* Scope.make()
      const waiting = yield* Effect.fork(Scope.extend(results.hold(LIMIT, 5_000), scope))
      yield* Effect.sleep(50)
      // The scope closes under the waiting fiber, which goes on.
      yield* Scope.close(scope, Exit.void)
      yield* full.close
      // Its turn passes on: no share for a caller that has gone.
      expect(Option.isNone(yield* Fiber.join(waiting))).toBe(true)
      expect(results.inUse()).toBe(0)
      const next = yield* holdIn(LIMIT, 0)
      expect(next.hold.take(LIMIT - 64 * KIB)).toBe(true)
      yield* next.close
      expect(results.inUse()).toBe(0)
    }).pipe(Effect.provide(memory))
  )

  it.live("cached results keep bytes outside any request only while they fit, and give them back when dropped", () =>
    Effect.gen(function* () {
      const results = yield* ResultMemory
      const kept = results.keep(800 * KIB)
      expect(kept).toBeDefined()
      expect(results.keep(300 * KIB)).toBeUndefined()
      const held = yield* holdIn(LIMIT, 0)
      expect(held.hold.take(300 * KIB)).toBe(false)
      kept!.release()
      kept!.release()
      expect(results.inUse()).toBe(0)
      yield* held.close
    }).pipe(Effect.provide(memory))
  )
})
