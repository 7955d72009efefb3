import { randomUUID } from "node:crypto"
import * as os from "node:os"
import { Duration, Effect, Schedule } from "effect"
import { LeasesRepo } from "../src/repos/LeasesRepo"
import { AppConfig } from "./AppConfig"

/** One replica at a time: a loop runs only while this process holds its named lease row. */
export class Leases extends Effect.Service<Leases>()("sluice/Leases", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* LeasesRepo
    const holder = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
    const ttl = config.leaseTtlSeconds
    const renewEvery = Duration.millis((ttl * 1000) / 3)

    /**
     * Runs `effect` forever under lease `name`: waits for the lease, renews it every ttl/3, and
     * interrupts `effect` the moment a renewal fails, so two replicas never run it together.
     */
    const runLeased = <E, R>(name: string, effect: Effect.Effect<unknown, E, R>) => {
      // Uninterruptible: a renewal still in flight when the loop stops would otherwise land after the release and re-take the lease.
      const attempt = repo.acquireOrRenew(name, holder, ttl).pipe(
        Effect.uninterruptible,
        Effect.tapError((error) => Effect.logWarning(`lease ${name}: store error`, error)),
        Effect.orElseSucceed(() => false)
      )
      const keepRenewing = attempt.pipe(
        Effect.delay(renewEvery),
        Effect.repeat({ while: (held) => held }),
        Effect.zipRight(Effect.logWarning(`lease ${name} lost`))
      )
      const term = Effect.gen(function* () {
        yield* attempt.pipe(Effect.repeat({ until: (held) => held, schedule: Schedule.spaced(renewEvery) }))
        yield* Effect.logInfo(`lease ${name} acquired by ${holder}`)
        yield* Effect.raceFirst(keepRenewing, Effect.zipRight(effect, Effect.never))
      })
      return Effect.forever(term).pipe(Effect.ensuring(repo.release(name, holder).pipe(Effect.ignore)))
    }

    return { holder, runLeased } as const
  }),
  dependencies: [LeasesRepo.Default]
}) {}
