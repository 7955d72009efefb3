import { Effect, Layer, Option, Schedule } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { Leases } from "../../layers/Leases"
import { AuditRepo } from "../../src/repos/AuditRepo"

const EVERY = "1 hour"

/** Cloud only: prunes audit rows past SP_AUDIT_RETENTION_DAYS. Self-hosted audit logs are never pruned. */
export const AuditRetentionLoop = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (config.selfHosted || Option.isNone(config.auditRetentionDays)) return
    const days = config.auditRetentionDays.value
    const repo = yield* AuditRepo
    const leases = yield* Leases
    const prune = Effect.gen(function* () {
      const before = Math.floor(Date.now() / 1000) - days * 86_400
      let removed = 0
      let batch = 0
      do {
        batch = yield* repo.pruneBefore(before)
        removed += batch
      } while (batch > 0)
      if (removed > 0) yield* Effect.logInfo(`audit retention removed ${removed} rows older than ${days} days`)
    }).pipe(Effect.catchAllCause((cause) => Effect.logError("audit retention failed", cause)))
    yield* leases.runLeased("audit-retention", Effect.repeat(prune, Schedule.spaced(EVERY))).pipe(Effect.forkScoped)
  })
)
