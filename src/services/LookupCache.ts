import { type Context, Deferred, Effect, FiberId, FiberSet } from "effect"

/**
 * Values looked up by key and kept `ttlMs` after each lookup, in plain maps: a hit is a map read
 * (an Effect Cache hit costs 2 µs, 23 µs where it is disconnected from its caller), for the
 * per-request lookups (key, connection, settings, budgets). Callers of one key share one lookup,
 * run in the background: interrupting the caller that started it interrupts no one else. A failed
 * lookup is not kept; one started before an invalidation keeps nothing, and callers after the
 * invalidation do not join it. At `capacity` (10,000 unless given), the oldest entry goes.
 */
export const makeLookupCache = <A, E>(options: { readonly lookup: (key: string) => Effect.Effect<A, E>; readonly ttlMs: number; readonly capacity?: number }) =>
  Effect.gen(function* () {
    const background = yield* FiberSet.make()
    // A lookup runs with the services the cache was made with, not those of the caller that starts it (a tenant's transaction), whose answer every caller shares.
    const context = yield* Effect.context<never>()
    const kept = new Map<string, { readonly value: A; readonly until: number }>()
    const lookups = new Map<string, Deferred.Deferred<A, E>>()
    const capacity = options.capacity ?? 10_000
    let generation = 0

    const fresh = (key: string) => {
      const hit = kept.get(key)
      return hit !== undefined && hit.until > Date.now() ? hit : undefined
    }

    /** The value kept for `key` if it is fresh: no lookup, no effect. */
    const peek = (key: string): A | undefined => fresh(key)?.value

    // Suspended: an effect made once and run again (a retry) reads the cache each time it runs.
    const get = (key: string): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        const hit = fresh(key)
        return hit !== undefined ? Effect.succeed(hit.value) : Effect.flatMap(lookupOf(key), Deferred.await)
      })

    /**
     * The lookup under way for `key`, or one begun now. Uninterruptible from registering it to
     * starting it: a caller interrupted between the two would leave every later caller of the key
     * waiting for good.
     */
    const lookupOf = (key: string): Effect.Effect<Deferred.Deferred<A, E>> =>
      Effect.uninterruptible(
        Effect.suspend(() => {
          const waiting = lookups.get(key)
          if (waiting !== undefined) return Effect.succeed(waiting)
          const done = Deferred.unsafeMake<A, E>(FiberId.none)
          lookups.set(key, done)
          const started = generation
          const lookup = options.lookup(key).pipe(
            Effect.mapInputContext((_: Context.Context<never>) => context),
            Effect.tap((value) =>
              Effect.sync(() => {
                if (started !== generation) return
                kept.delete(key)
                if (kept.size >= capacity) kept.delete(kept.keys().next().value!)
                kept.set(key, { value, until: Date.now() + options.ttlMs })
              })
            )
          )
          return FiberSet.run(background, Effect.interruptible(lookup)).pipe(
            Effect.map((fiber) => {
              // However the lookup ends (interrupted before it began, where the cache's scope has closed, too), its waiters are told.
              fiber.addObserver((exit) => {
                if (lookups.get(key) === done) lookups.delete(key)
                Deferred.unsafeDone(done, exit)
              })
              return done
            })
          )
        })
      )

    /** Forgets `key`: a lookup under way keeps nothing it reads, and callers from now on wait for a new one. */
    const invalidate = (key: string) =>
      Effect.sync(() => {
        generation++
        kept.delete(key)
        lookups.delete(key)
      })

    /** Forgets every key, as `invalidate` does one. */
    const invalidateAll = Effect.sync(() => {
      generation++
      kept.clear()
      lookups.clear()
    })

    return { get, peek, invalidate, invalidateAll } as const
  })
