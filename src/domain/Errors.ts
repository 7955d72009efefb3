import { HttpApiSchema } from "@effect/platform"
import { type Cause, Schema, type SchemaAST } from "effect"
import { Scope } from "./Scope"

/** The stable snake_case `code` an error body carries, filled in on construction. */
const code = <C extends string>(value: C) =>
  Schema.Literal(value).pipe(Schema.propertySignature, Schema.withConstructorDefault(() => value))

type Body<Code extends string> = { readonly code: ReturnType<typeof code<Code>>; readonly message: typeof Schema.String }

/** The class `ApiError` makes: a tagged error whose schema's encoded side is the body alone, without `_tag`. */
export interface ApiErrorClass<Self, Tag extends string, Fields extends Schema.Struct.Fields>
  extends Schema.Class<
    Self,
    { readonly _tag: Schema.tag<Tag> } & Fields,
    Schema.Struct.Encoded<Fields>,
    Schema.Struct.Context<Fields>,
    Schema.Struct.Constructor<Fields>,
    {},
    Cause.YieldableError
  > {
  readonly _tag: Tag
}

/**
 * An error the API answers with: `status` and the body `{code, message, …fields}`. Handlers fail
 * with an instance, a tagged error like any other (`_tag` is for `catchTag`); its schema is the
 * body as sent, without the tag, so the server encodes it, the typed client decodes it back into
 * the class and the OpenAPI document shows it. Errors sharing a status are told apart by `code`.
 */
export const ApiError =
  <Self>() =>
  <Tag extends string, Code extends string, Fields extends Schema.Struct.Fields = {}>(
    tag: Tag,
    sent: { readonly code: Code; readonly status: number },
    fields?: Fields
  ): ApiErrorClass<Self, Tag, Body<Code> & Fields> => {
    const all = { code: code(sent.code), message: Schema.String, ...fields }
    const body = Schema.encodedBoundSchema(Schema.Struct(all))
    const asts = new WeakMap<object, SchemaAST.Transformation>()
    return class extends Schema.TaggedError<{}>()(tag, all) {
      static override get ast(): SchemaAST.Transformation {
        const known = asts.get(this)
        if (known !== undefined) return known
        // From the body to the class's own schema (the body with `_tag`) and back.
        const tagged = Schema.make<unknown, { readonly _tag: Tag }, never>(super.ast)
        const ast = Schema.transform(body, tagged, {
          strict: false,
          decode: (fields) => ({ ...fields, _tag: tag }),
          encode: ({ _tag, ...fields }) => fields
        }).annotations({ identifier: this.identifier, ...HttpApiSchema.annotations({ status: sent.status }) }).ast as SchemaAST.Transformation
        asts.set(this, ast)
        return ast
      }
    } as any
  }

export class InvalidRequest extends ApiError<InvalidRequest>()("InvalidRequest", { code: "invalid_request", status: 400 }) {}

export class Unauthenticated extends ApiError<Unauthenticated>()("Unauthenticated", { code: "unauthenticated", status: 401 }) {}

export class InvalidApiKey extends ApiError<InvalidApiKey>()("InvalidApiKey", { code: "invalid_api_key", status: 401 }) {}

export class InsufficientScope extends ApiError<InsufficientScope>()(
  "InsufficientScope",
  { code: "insufficient_scope", status: 403 },
  { required_scope: Scope }
) {}

export class Forbidden extends ApiError<Forbidden>()("Forbidden", { code: "forbidden", status: 403 }) {}

export class NotFound extends ApiError<NotFound>()("NotFound", { code: "not_found", status: 404 }) {}

export class Conflict extends ApiError<Conflict>()("Conflict", { code: "conflict", status: 409 }) {}

export class PayloadTooLarge extends ApiError<PayloadTooLarge>()("PayloadTooLarge", { code: "payload_too_large", status: 413 }) {}

export class RateLimited extends ApiError<RateLimited>()(
  "RateLimited",
  { code: "rate_limited", status: 429 },
  { retry_after_seconds: Schema.Int }
) {}

/** A resource that existed and is gone for good (an expired snapshot). */
export class Gone extends ApiError<Gone>()("Gone", { code: "gone", status: 410 }) {}

/** The gateway process runs as many of a kind of thing as it may (sandboxes): try again once one ends. */
export class CapacityReached extends ApiError<CapacityReached>()("CapacityReached", { code: "capacity_reached", status: 429 }) {}

/** A feature this deployment does not offer (sandboxes in cloud mode without a remote provider). */
export class NotAvailableHere extends ApiError<NotAvailableHere>()("NotAvailableHere", { code: "not_available", status: 501 }) {}

export class Unavailable extends ApiError<Unavailable>()("Unavailable", { code: "unavailable", status: 503 }) {}

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
