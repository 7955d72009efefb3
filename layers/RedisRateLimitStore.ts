import { RateLimiter } from "@effect/experimental"
import { Duration, Effect, Layer } from "effect"
import { Redis, type RedisOptions } from "ioredis"

interface RedisWithWindows extends Redis {
  fixedWindow(key: string, tokens: number, refillMillis: number, limit: number | ""): Promise<[number, number]>
}

/**
 * The in-memory store's fixed window, in Redis: each token taken pushes the window's end out by
 * window / limit (a fraction of a millisecond unless the limit divides the window). The end is kept
 * as an exact number beside the count, so PEXPIRE, which takes whole milliseconds only, never sees
 * a fraction, and rounding never accumulates. Redis's clock serves every replica alike.
 */
const FIXED_WINDOW = `
redis.replicate_commands()
local key = KEYS[1]
local tokens = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local state = redis.call("HMGET", key, "count", "ends_at")
local count = tonumber(state[1]) or 0
local ends = tonumber(state[2]) or now
if ends <= now then
  count = 0
  ends = now
end
if limit and count + tokens > limit then
  return { count + tokens, math.ceil(ends - now) }
end
count = count + tokens
ends = ends + refill * tokens
local ttl = math.ceil(ends - now)
redis.call("HSET", key, "count", count, "ends_at", ends)
redis.call("PEXPIRE", key, string.format("%d", ttl))
return { count, ttl }
`

const storeError = (cause: unknown) =>
  new RateLimiter.RateLimitStoreError({ message: "The rate-limit store did not answer", cause })

/**
 * Fixed-window counters in Redis, shared by replicas. `options.commandTimeout` bounds each call;
 * `socketTimeout` drops a connection that stops answering, so the client reconnects once Redis is back.
 */
export const layerRedisRateLimitStore = (options: RedisOptions, prefix: string) =>
  Layer.scoped(
    RateLimiter.RateLimiterStore,
    Effect.gen(function* () {
      const redis = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis(options) as RedisWithWindows),
        (redis) => Effect.sync(() => redis.disconnect())
      )
      redis.on("error", () => undefined)
      redis.defineCommand("fixedWindow", { lua: FIXED_WINDOW, numberOfKeys: 1, readOnly: false })
      return RateLimiter.RateLimiterStore.of({
        fixedWindow: ({ key, tokens, refillRate, limit }) =>
          Effect.tryPromise({
            try: () => redis.fixedWindow(`${prefix}${key}`, tokens, Duration.toMillis(refillRate), limit ?? ""),
            catch: storeError
          }),
        tokenBucket: () => Effect.fail(storeError(new Error("token buckets are not kept in Redis by Sluice")))
      })
    })
  )
