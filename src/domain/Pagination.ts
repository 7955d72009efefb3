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

export const encodeCursor = (position: ReadonlyArray<string | number>): string =>
  Buffer.from(JSON.stringify(position)).toString("base64url")

/** An opaque cursor from a previous page; anything else is a 400, never a crash. */
export const decodeCursor = <A>(cursor: string, schema: Schema.Schema<A, any>): Either.Either<A, InvalidRequest> =>
  Either.try(() => JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))).pipe(
    Either.flatMap((json) => Schema.decodeUnknownEither(schema)(json)),
    Either.mapLeft(() => new InvalidRequest({ message: "cursor is not a cursor returned by this API" }))
  )
