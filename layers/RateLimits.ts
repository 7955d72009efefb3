import { RateLimiter } from "@effect/experimental"
import * as RedisStore from "@effect/experimental/RateLimiter/Redis"
import { Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { RateLimited, Unavailable } from "../src/domain/Errors"
import type { Principal } from "../src/domain/Principal"
import { AppConfig } from "./AppConfig"

export type RateClass = "auth" | "general" | "expensive"

const redisOptions = (url: URL) => ({
  host: url.hostname,
  port: url.port ? Number(url.port) : 6379,
  ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
  ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
  ...(url.pathname.length > 1 ? { db: Number(url.pathname.slice(1)) } : {}),
  ...(url.protocol === "rediss:" ? { tls: {} } : {}),
  prefix: "sluice:ratelimit:",
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false
})

/** Counters live in Redis when REDIS_URL is set (shared by replicas), in this process otherwise. */
const StoreLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Option.match(config.redisUrl, {
      onNone: () => RateLimiter.layerStoreMemory,
      onSome: (url) => RedisStore.layerStore(redisOptions(new URL(Redacted.value(url))))
    })
  )
)

export class RateLimits extends Effect.Service<RateLimits>()("sluice/RateLimits", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const limiter = yield* RateLimiter.RateLimiter
    const perIpLimit: Record<RateClass, number> = {
      auth: config.authRpmPerIp,
      general: config.generalRpmPerIp,
      expensive: config.expensiveRpmPerIp
    }

    const consume = (key: string, limit: number, what: string) =>
      limiter.consume({ key, limit, window: "1 minute", algorithm: "fixed-window", onExceeded: "fail" }).pipe(
        Effect.asVoid,
        Effect.catchTags({
          RateLimiterError: (error) =>
            error.reason === "Exceeded"
              ? Effect.fail(
                  new RateLimited({
                    message: `Rate limit of ${limit} requests per minute ${what} exceeded`,
                    retry_after_seconds: Math.max(1, Math.ceil(Duration.toSeconds(error.retryAfter)))
                  })
                )
              : Effect.fail(new Unavailable({ message: "The rate-limit store is unavailable; try again shortly" }))
        })
      )

    // Serve the first request only once a shared store answers; if it never does, start anyway and refuse with 503.
    yield* consume("startup-probe", Number.MAX_SAFE_INTEGER, "at start").pipe(
      Effect.retry(Schedule.spaced("100 millis")),
      Effect.timeout("3 seconds"),
      Effect.catchAll(() => Effect.logWarning("the rate-limit store does not answer; limited requests get 503 until it does"))
    )

    const perIp = (rateClass: RateClass, ip: string) => consume(`ip:${rateClass}:${ip}`, perIpLimit[rateClass], "from this address")

    /** Per key (or session user), and per org in cloud mode. */
    const perPrincipal = (principal: Principal) =>
      Effect.zipRight(
        consume(`key:${principal.keyId ?? `${principal.orgId}/${principal.userId}`}`, config.perKeyRpm, "for this key"),
        config.selfHosted ? Effect.void : consume(`org:${principal.orgId}`, config.perOrgRpm, "for this organization")
      )

    return { perIp, perPrincipal } as const
  }),
  dependencies: [RateLimiter.layer.pipe(Layer.provide(StoreLive))]
}) {}
