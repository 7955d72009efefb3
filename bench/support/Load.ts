/** Shared by the benchmarks: closed-loop clients and their latency percentiles. */

/** Rate limits out of the way, so a benchmark measures the path and not the limiter's refusals. */
export const UNLIMITED = {
  SP_RATE_LIMIT_EXPENSIVE_RPM: "1000000000",
  SP_RATE_LIMIT_GENERAL_RPM: "1000000000",
  SP_PER_KEY_RPM: "1000000000",
  SP_PER_ORG_RPM: "1000000000"
}

export interface Figures {
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** `clients` loops each issuing one call after another for `ms` (told which client it is); latency of every call. */
const load = async (clients: number, ms: number, call: (client: number) => Promise<void>): Promise<Figures> => {
  const latencies: Array<number> = []
  const until = performance.now() + ms
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (performance.now() < until) {
        const started = performance.now()
        await call(client)
        latencies.push(performance.now() - started)
      }
    })
  )
  latencies.sort((a, b) => a - b)
  return { perSecond: latencies.length / (ms / 1000), p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) }
}

/** A 1.5 s warm-up, then `seconds` measured. */
export const measure = async (clients: number, seconds: number, call: (client: number) => Promise<void>) => {
  await load(clients, 1500, call)
  return load(clients, seconds * 1000, call)
}

/** The cells comparing a baseline with the measured path: q/s each, ratio, p50 and p99 with what was added. */
export const comparisonCells = (a: Figures, b: Figures) =>
  `${Math.round(a.perSecond)} | ${Math.round(b.perSecond)} | ${(b.perSecond / a.perSecond).toFixed(2)} | ` +
  `${a.p50.toFixed(2)} / ${b.p50.toFixed(2)} | ${(b.p50 - a.p50).toFixed(2)} | ${a.p99.toFixed(2)} / ${b.p99.toFixed(2)} | ${(b.p99 - a.p99).toFixed(2)} |`
