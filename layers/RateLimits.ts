import { RateLimiter } from "@effect/experimental"
import { Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { RateLimited, Unavailable } from "../src/domain/Errors"
import type { Principal } from "../src/domain/Principal"
import { AppConfig } from "./AppConfig"
import { layerRedisRateLimitStore } from "./RedisRateLimitStore"

export type RateClass = "auth" | "general" | "expensive"

// Every call is answered or refused within the deadline: a Redis that accepts and never replies is dropped and dialled again.
const redisOptions = (url: URL, deadlineMillis: number) => ({
  host: url.hostname,
  port: url.port ? Number(url.port) : 6379,
  ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
  ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
  ...(url.pathname.length > 1 ? { db: Number(url.pathname.slice(1)) } : {}),
  ...(url.protocol === "rediss:" ? { tls: {} } : {}),
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
  connectTimeout: deadlineMillis,
  commandTimeout: deadlineMillis,
  socketTimeout: deadlineMillis
})

/** Counters live in Redis when REDIS_URL is set (shared by replicas); without it, RateLimits counts in this process and the limiter is idle. */
const StoreLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Option.match(config.redisUrl, {
      onNone: () => RateLimiter.layerStoreMemory,
      onSome: (url) => layerRedisRateLimitStore(redisOptions(new URL(Redacted.value(url)), config.storeTimeoutSeconds * 1000), "sluice:rate-window:")
    })
  )
)

// A minute, the window of every limit.
const WINDOW_MS = 60_000
// Passed windows are swept this often (in calls), so keys seen once do not pile up.
const SWEEP_EVERY = 1_024

/**
 * Fixed one-minute windows in this process: a counter per key, started by its first call.
 * Returns how long until the key's window ends when this call is over its limit.
 */
const memoryWindows = () => {
  const windows = new Map<string, { resetAt: number; count: number }>()
  let calls = 0
  const current = (key: string, now: number) => {
    const window = windows.get(key)
    return window === undefined || window.resetAt <= now ? undefined : window
  }
  return {
    take: (key: string, limit: number): number | undefined => {
      const now = Date.now()
      if (++calls % SWEEP_EVERY === 0) for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k)
      let window = current(key, now)
      if (window === undefined) {
        window = { resetAt: now + WINDOW_MS, count: 0 }
        windows.set(key, window)
      }
      window.count++
      return window.count > limit ? window.resetAt - now : undefined
    },
    /** Whether the key's next call is within its limit; counts nothing. */
    hasRoom: (key: string, limit: number) => (current(key, Date.now())?.count ?? 0) < limit
  }
}

export class RateLimits extends Effect.Service<RateLimits>()("sluice/RateLimits", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const limiter = yield* RateLimiter.RateLimiter
    const perIpLimit: Record<RateClass, number> = {
      auth: config.authRpmPerIp,
      general: config.generalRpmPerIp,
      expensive: config.expensiveRpmPerIp
    }

    const exceeded = (limit: number, what: string, retryAfterMs: number) =>
      new RateLimited({
        message: `Rate limit of ${limit} requests per minute ${what} exceeded`,
        retry_after_seconds: Math.max(1, Math.ceil(retryAfterMs / 1000))
      })

    // In this process a counter is a map entry: one step per call (the limiter's own store costs dozens on every request).
    const inProcess = (windows: ReturnType<typeof memoryWindows>) => (key: string, limit: number, what: string) =>
      Effect.suspend(() => {
        const wait = windows.take(key, limit)
        return wait === undefined ? Effect.void : Effect.fail(exceeded(limit, what, wait))
      })

    const shared = (key: string, limit: number, what: string) =>
      limiter.consume({ key, limit, window: WINDOW_MS, algorithm: "fixed-window", onExceeded: "fail" }).pipe(
        Effect.asVoid,
        Effect.catchTags({
          RateLimiterError: (error) =>
            error.reason === "Exceeded"
              ? Effect.fail(exceeded(limit, what, Duration.toMillis(error.retryAfter)))
              : Effect.fail(new Unavailable({ message: "The rate-limit store is unavailable; try again shortly" }))
        })
      )

    const local = Option.isNone(config.redisUrl) ? memoryWindows() : undefined
    const consume = local === undefined ? shared : inProcess(local)

    // Serve the first request only once a shared store answers; if it never does, start anyway and refuse with 503.
    if (Option.isSome(config.redisUrl)) {
      yield* shared("startup-probe", Number.MAX_SAFE_INTEGER, "at start").pipe(
        Effect.retry(Schedule.spaced("100 millis")),
        Effect.timeout("3 seconds"),
        Effect.catchAll(() => Effect.logWarning("the rate-limit store does not answer; limited requests get 503 until it does"))
      )
    }

    const ipKey = (rateClass: RateClass, ip: string) => `ip:${rateClass}:${ip}`
    const principalLimits = (principal: Principal): ReadonlyArray<readonly [key: string, limit: number, what: string]> => {
      const perKey = [`key:${principal.keyId ?? `${principal.orgId}/${principal.userId}`}`, config.perKeyRpm, "for this key"] as const
      return config.selfHosted ? [perKey] : [perKey, [`org:${principal.orgId}`, config.perOrgRpm, "for this organization"]]
    }

    const perIp = (rateClass: RateClass, ip: string) => consume(ipKey(rateClass, ip), perIpLimit[rateClass], "from this address")

    /** Per key (or session user), and per org in cloud mode. */
    const perPrincipal = (principal: Principal) => Effect.forEach(principalLimits(principal), ([key, limit, what]) => consume(key, limit, what), { discard: true })

    /**
     * `perIp` then `perPrincipal`, decided in this process without an effect: true when every limit
     * has room, and the call is then counted against each (unless `count` is false: only asked);
     * false (nothing counted) when one has none, or when the limits are kept in a shared store,
     * which only the effects can ask.
     */
    const admitNow = (rateClass: RateClass, ip: string, principal: Principal | null, count = true) => {
      if (local === undefined) return false
      const limits = principal === null ? [] : principalLimits(principal)
      const ip_ = ipKey(rateClass, ip)
      if (!local.hasRoom(ip_, perIpLimit[rateClass]) || limits.some(([key, limit]) => !local.hasRoom(key, limit))) return false
      if (!count) return true
      local.take(ip_, perIpLimit[rateClass])
      for (const [key, limit] of limits) local.take(key, limit)
      return true
    }

    return { perIp, perPrincipal, admitNow } as const
  }),
  dependencies: [RateLimiter.layer.pipe(Layer.provide(StoreLive))]
}) {}
