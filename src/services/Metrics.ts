import { Effect } from "effect"

export const MAX_METRICS_STREAMS = 20

/** In-process request counters for the live metrics stream. */
export class Metrics extends Effect.Service<Metrics>()("sluice/Metrics", {
  sync: () => {
    const startedAt = Date.now()
    const counters = { requests: 0, success: 0, refused: 0, errors: 0, totalMs: 0 }
    let inFlight = 0
    let streams = 0

    const begin = () => {
      inFlight++
    }
    const end = (outcome: "success" | "refused" | "error", durationMs: number) => {
      inFlight--
      counters.requests++
      counters[outcome === "error" ? "errors" : outcome]++
      counters.totalMs += durationMs
    }

    const snapshot = () => ({
      uptime_seconds: Math.round((Date.now() - startedAt) / 1000),
      in_flight: inFlight,
      requests_total: counters.requests,
      success_total: counters.success,
      refused_total: counters.refused,
      errors_total: counters.errors,
      mean_latency_ms: counters.requests === 0 ? 0 : Number((counters.totalMs / counters.requests).toFixed(3)),
      metrics_streams: streams,
      rss_bytes: process.memoryUsage.rss()
    })

    /** A stream slot, or false when all are taken. */
    const tryOpenStream = () => {
      if (streams >= MAX_METRICS_STREAMS) return false
      streams++
      return true
    }
    const closeStream = () => {
      streams--
    }

    return { begin, end, snapshot, tryOpenStream, closeStream } as const
  }
}) {}
