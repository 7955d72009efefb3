import { Either, Schema } from "effect"
import { InvalidRequest } from "./Errors"

export const PageParams = Schema.Struct({
  limit: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 500, { message: () => "limit must be between 1 and 500" }))
  ),
  cursor: Schema.optional(Schema.String.pipe(Schema.maxLength(512)))
})

export const Page = <A, I, R>(item: Schema.Schema<A, I, R>) =>
  Schema.Struct({ items: Schema.Array(item), next_cursor: Schema.NullOr(Schema.String) })

/** One page from `limit + 1` rows: the extra row only tells whether a next page exists. */
export const pageOf = <A>(rows: ReadonlyArray<A>, limit: number, position: (last: A) => ReadonlyArray<string | number>) => {
  const items = rows.slice(0, limit)
  const last = items.at(-1)
  return { items, next_cursor: rows.length > limit && last !== undefined ? encodeCursor(position(last)) : null }
}

// btoa/atob rather than Buffer: the web app shares this module.
const toBase64Url = (text: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(text))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
const fromBase64Url = (encoded: string) =>
  new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(atob(encoded.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0)))

export const encodeCursor = (position: ReadonlyArray<string | number>): string => toBase64Url(JSON.stringify(position))

/** An opaque cursor from a previous page; anything else is a 400, never a crash. */
export const decodeCursor = <A>(cursor: string, schema: Schema.Schema<A, any>): Either.Either<A, InvalidRequest> =>
  Either.try(() => JSON.parse(fromBase64Url(cursor))).pipe(
    Either.flatMap((json) => Schema.decodeUnknownEither(schema)(json)),
    Either.mapLeft(() => new InvalidRequest({ message: "cursor is not a cursor returned by this API" }))
  )

/** A time that is one (JavaScript reads 30 February as 1 March; the store refuses it, and year 0). */
const isRealTime = (time: string) => {
  const parsed = new Date(time)
  return !Number.isNaN(parsed.getTime()) && Number(time.slice(0, 4)) >= 1 && parsed.toISOString().slice(0, 19) === time.slice(0, 19)
}

/**
 * A cursor of (time, id) for lists ordered by a timestamp, as this API writes them (an ISO 8601 UTC
 * time, an id of letters, digits, _ and -): anything else is not a cursor this API gave out.
 */
export const TimeAndIdCursor = Schema.Tuple(
  Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/), Schema.filter(isRealTime)),
  Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,100}$/))
)
