import { Effect } from "effect"

/** One piece of work at a time per key: `withLock(key, work)` runs `work` once no other work of that key runs. */
export const keyedLocks = <K>() => {
  const locks = new Map<K, Effect.Semaphore>()
  return <A, E, R>(key: K, work: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      let lock = locks.get(key)
      if (lock === undefined) locks.set(key, (lock = Effect.unsafeMakeSemaphore(1)))
      return lock.withPermits(1)(work)
    })
}
