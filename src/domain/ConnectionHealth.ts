import { Schema } from "effect"
import { DbType } from "./Connection"

export const HEALTH_STATUSES = ["healthy", "degraded", "unhealthy", "unknown"] as const
export const HealthStatus = Schema.Literal(...HEALTH_STATUSES)
export type HealthStatus = typeof HealthStatus.Type

export const WindowParams = Schema.Struct({
  window_minutes: Schema.optional(
    Schema.NumberFromString.pipe(
      Schema.int(),
      Schema.between(1, 10_080, { message: () => "window_minutes must be between 1 and 10080 (the 7 days kept)" })
    )
  )
})

export const ConnectionHealth = Schema.Struct({
  name: Schema.String,
  db_type: DbType,
  status: HealthStatus,
  window_minutes: Schema.Number,
  checks: Schema.Number,
  error_rate: Schema.NullOr(Schema.Number),
  p50_ms: Schema.NullOr(Schema.Number),
  p95_ms: Schema.NullOr(Schema.Number),
  last_checked_at: Schema.NullOr(Schema.Date),
  last_error: Schema.NullOr(Schema.Struct({ message: Schema.String, step: Schema.NullOr(Schema.String), at: Schema.Date }))
})
export type ConnectionHealth = typeof ConnectionHealth.Type

export const HealthEvent = Schema.Struct({
  checked_at: Schema.Date,
  ok: Schema.Boolean,
  latency_ms: Schema.Number,
  step: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String)
})

export const ConnectionStats = Schema.Struct({
  window_minutes: Schema.Number,
  connections: Schema.Number,
  by_db_type: Schema.Record({ key: Schema.String, value: Schema.Number }),
  by_status: Schema.Record({ key: HealthStatus, value: Schema.Number }),
  open_pools: Schema.Number,
  checks: Schema.Number,
  error_rate: Schema.NullOr(Schema.Number),
  p50_ms: Schema.NullOr(Schema.Number),
  p95_ms: Schema.NullOr(Schema.Number)
})
