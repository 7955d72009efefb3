import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { Scope } from "./Scope"

/** The stable snake_case `code` an error body carries, filled in on construction. */
export const code = <C extends string>(value: C) =>
  Schema.Literal(value).pipe(Schema.propertySignature, Schema.withConstructorDefault(() => value))

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()(
  "InvalidRequest",
  { code: code("invalid_request"), message: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()(
  "Unauthenticated",
  { code: code("unauthenticated"), message: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

export class InvalidApiKey extends Schema.TaggedError<InvalidApiKey>()(
  "InvalidApiKey",
  { code: code("invalid_api_key"), message: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

export class InsufficientScope extends Schema.TaggedError<InsufficientScope>()(
  "InsufficientScope",
  { code: code("insufficient_scope"), message: Schema.String, required_scope: Scope },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  { code: code("forbidden"), message: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class NotFound extends Schema.TaggedError<NotFound>()(
  "NotFound",
  { code: code("not_found"), message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export class Conflict extends Schema.TaggedError<Conflict>()(
  "Conflict",
  { code: code("conflict"), message: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()(
  "PayloadTooLarge",
  { code: code("payload_too_large"), message: Schema.String },
  HttpApiSchema.annotations({ status: 413 })
) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()(
  "RateLimited",
  { code: code("rate_limited"), message: Schema.String, retry_after_seconds: Schema.Int },
  HttpApiSchema.annotations({ status: 429 })
) {}

export class Unavailable extends Schema.TaggedError<Unavailable>()(
  "Unavailable",
  { code: code("unavailable"), message: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/** Failures the authentication middleware may produce on any /api route. */
export const AuthFailure = Schema.Union(
  InvalidRequest,
  Unauthenticated,
  InvalidApiKey,
  InsufficientScope,
  Forbidden,
  RateLimited,
  Unavailable
)
