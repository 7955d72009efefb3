import { Effect, Option } from "effect"
import { AppConfig } from "./AppConfig"
import type { ByteMeter } from "./connectors/Connector"

/** Which limit refused a result: its own cap, or the memory all results share. */
export type Refusal = "cap" | "memory"

/** One result's share of the result memory: its meter while its rows are read, held until the scope it was taken in closes. */
export interface ResultHold extends ByteMeter {
  /** Counts the result at its real size (its JSON, once it is whole) instead of what was metered; false as `take` is. */
  readonly settle: (bytes: number) => boolean
  /** Which limit refused the result, once one has. */
  readonly refusedBy: () => Refusal | undefined
}

// What a result takes as it is admitted: a result waits in line only when not even this much is free.
const ADMISSION_BYTES = 64 * 1024

interface Waiter {
  readonly admit: () => void
}

/**
 * The memory every buffered result shares (`SP_RESULT_MEMORY_MB`): results in flight, from the
 * first row read until their response is written, and the result cache's entries. A result is
 * admitted in turn when a little is free (or waits a moment in line), then takes bytes as its rows
 * are read; a row that does not fit stops the read, and the result is refused rather than held.
 */
export class ResultMemory extends Effect.Service<ResultMemory>()("sluice/ResultMemory", {
  effect: Effect.gen(function* () {
    const limit = (yield* AppConfig).resultMemoryBytes
    let used = 0
    const line: Array<Waiter> = []

    const fits = (bytes: number) => used + bytes <= limit
    const release = (bytes: number) => {
      used -= bytes
      while (line.length > 0 && fits(ADMISSION_BYTES)) line.shift()!.admit()
    }

    /**
     * Admission: at once when nobody waits and a little is free, else in line for at most `waitMs`.
     * `take` is asked at the caller's turn: false where it has gone meanwhile, and the turn passes on.
     */
    const admission = (waitMs: number, take: () => boolean) =>
      Effect.async<boolean>((resume) => {
        const admit = () => {
          if (!take()) return false
          used += ADMISSION_BYTES
          return true
        }
        if (line.length === 0 && fits(ADMISSION_BYTES)) return resume(Effect.succeed(admit()))
        const leave = () => {
          clearTimeout(timer)
          const at = line.indexOf(waiter)
          if (at >= 0) line.splice(at, 1)
        }
        const waiter: Waiter = {
          admit: () => {
            leave()
            resume(Effect.succeed(admit()))
          }
        }
        const timer = setTimeout(() => {
          leave()
          resume(Effect.succeed(false))
        }, waitMs)
        line.push(waiter)
        return Effect.sync(leave)
      })

    /** One result's share, not yet admitted: `admitted` takes the admission's bytes (false where it has ended), `end` gives everything back. */
    const share = (cap: number) => {
      let held = 0
      let counted = 0
      let refused: Refusal | undefined
      let over = false
      const giveBack = () => {
        if (held > 0) release(held)
        held = 0
      }
      const refuse = (why: Refusal) => {
        refused = why
        // The reader drops the rows it holds as it stops.
        giveBack()
        return false
      }
      const count = (total: number) => {
        if (refused !== undefined || over) return false
        if (total > cap) return refuse("cap")
        const more = total - held
        if (more > 0) {
          if (!fits(more)) return refuse("memory")
          used += more
          held += more
        }
        counted = total
        return true
      }
      const hold: ResultHold = {
        cap,
        take: (bytes) => count(counted + bytes),
        settle: count,
        refusedBy: () => refused
      }
      return {
        hold,
        admitted: () => {
          if (over) return false
          held = ADMISSION_BYTES
          return true
        },
        // Once given back the hold takes nothing more: a reader still running then would count bytes no one gives back.
        end: () => {
          over = true
          giveBack()
        }
      }
    }

    /**
     * A share for one result of at most `cap` bytes, given back when the current scope closes; none
     * (Option.none) when the memory stayed full for `waitMs`.
     */
    const hold = (cap: number, waitMs: number) =>
      Effect.gen(function* () {
        const result = share(cap)
        // Before the wait: a share granted to a caller that has gone meanwhile is given back all the same.
        yield* Effect.addFinalizer(() => Effect.sync(result.end))
        // A scope closed while the hold waited in line (its request answered) takes nothing at its turn: its finalizer has run.
        const admitted = yield* admission(waitMs, result.admitted)
        return admitted ? Option.some(result.hold) : Option.none<ResultHold>()
      })

    /** `hold` where it is admitted at once, without an effect: the share and the function that gives it back; undefined where it would wait in line. */
    const holdNow = (cap: number): { readonly hold: ResultHold; readonly end: () => void } | undefined => {
      if (line.length > 0 || !fits(ADMISSION_BYTES)) return undefined
      const result = share(cap)
      result.admitted()
      used += ADMISSION_BYTES
      return result
    }

    /** Bytes held outside any request (a cached result) until `release` is called; undefined when they do not fit now. */
    const keep = (bytes: number): { readonly release: () => void } | undefined => {
      if (line.length > 0 || !fits(bytes)) return undefined
      used += bytes
      let kept = true
      return {
        release: () => {
          if (kept) release(bytes)
          kept = false
        }
      }
    }

    return { limit, hold, holdNow, keep, inUse: () => used } as const
  })
}) {}
