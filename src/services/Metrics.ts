import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"

export const MAX_METRICS_STREAMS = 20

type Outcome = "success" | "refused" | "error"
const emptyCounters = () => ({ requests: 0, success: 0, refused: 0, errors: 0, totalMs: 0 })

/** In-process request counters per organization, for the live metrics stream (a tenant sees only its own). */
export class Metrics extends Effect.Service<Metrics>()("sluice/Metrics", {
  sync: () => {
    const startedAt = Date.now()
    const byOrg = new Map<OrgId, ReturnType<typeof emptyCounters>>()
    let streams = 0

    const record = (orgId: OrgId, outcome: Outcome, durationMs: number) => {
      let counters = byOrg.get(orgId)
      if (counters === undefined) byOrg.set(orgId, (counters = emptyCounters()))
      counters.requests++
      counters[outcome === "error" ? "errors" : outcome]++
      counters.totalMs += durationMs
    }

    const snapshot = (orgId: OrgId) => {
      const c = byOrg.get(orgId) ?? emptyCounters()
      return {
        uptime_seconds: Math.round((Date.now() - startedAt) / 1000),
        requests_total: c.requests,
        success_total: c.success,
        refused_total: c.refused,
        errors_total: c.errors,
        mean_latency_ms: c.requests === 0 ? 0 : Number((c.totalMs / c.requests).toFixed(3))
      }
    }

    /** A stream slot, or false when all are taken. */
    const tryOpenStream = () => {
      if (streams >= MAX_METRICS_STREAMS) return false
      streams++
      return true
    }
    const closeStream = () => {
      streams--
    }

    return { record, snapshot, tryOpenStream, closeStream } as const
  }
}) {}
