import { Schema } from "effect"
import { ColumnInfo, TableInfo } from "./SchemaSnapshot"

const strict = { parseOptions: { onExcessProperty: "error" } } as const
const Name = (what: string) =>
  Schema.String.pipe(
    Schema.minLength(1, { message: () => `${what} is required` }),
    Schema.maxLength(300, { message: () => `${what} must be at most 300 characters` })
  )
const Text = Schema.NullOr(Schema.String.pipe(Schema.maxLength(2000, { message: () => "must be at most 2000 characters" })))
const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const EndorsementStatus = Schema.Literal("trusted", "deprecated")

export const EndorsementInput = Schema.Struct({
  table: Name("table"),
  column: optional(Schema.NullOr(Name("column"))),
  status: EndorsementStatus,
  note: optional(Text)
}).annotations(strict)

/** The connection's whole set of endorsements: what is not listed is no longer endorsed. */
export const EndorsementsInput = Schema.Struct({
  endorsements: Schema.Array(EndorsementInput).pipe(Schema.maxItems(5000, { message: () => "at most 5000 endorsements" }))
}).annotations(strict)

export const Endorsements = Schema.Struct({
  connection: Schema.String,
  endorsements: Schema.Array(
    Schema.Struct({
      table: Schema.String,
      column: Schema.NullOr(Schema.String),
      status: EndorsementStatus,
      note: Schema.NullOr(Schema.String),
      updated_by: Schema.NullOr(Schema.String),
      updated_at: Schema.Date
    })
  )
})

/** Where a description came from: a person, the generator, or the database's own comment. */
export const DescriptionSource = Schema.NullOr(Schema.Literal("manual", "generated", "comment"))

export const Annotations = Schema.Struct({
  connection: Schema.String,
  generated: optional(Schema.Int),
  tables: Schema.Array(
    Schema.Struct({
      table: Schema.String,
      description: Schema.NullOr(Schema.String),
      source: DescriptionSource,
      columns: Schema.Array(Schema.Struct({ name: Schema.String, description: Schema.NullOr(Schema.String), source: DescriptionSource }))
    })
  )
})

export const RefineInput = Schema.Struct({
  table: Name("table"),
  description: optional(Text),
  columns: optional(
    Schema.Array(Schema.Struct({ name: Name("column"), description: Text }).annotations(strict)).pipe(Schema.maxItems(500))
  )
}).annotations(strict)

export const CorrectColumnsInput = Schema.Struct({
  table: Name("table"),
  columns: Schema.Array(
    Schema.Struct({
      name: Name("column"),
      type: optional(Schema.NullOr(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200, { message: () => "type must be at most 200 characters" })))),
      description: optional(Text)
    }).annotations(strict)
  ).pipe(Schema.minItems(1, { message: () => "columns must name at least one column" }), Schema.maxItems(500))
}).annotations(strict)

const Curated = {
  description_source: DescriptionSource,
  endorsement: Schema.NullOr(EndorsementStatus),
  endorsement_note: Schema.NullOr(Schema.String)
}

export const EnrichedSchema = Schema.Struct({
  connection: Schema.String,
  version: Schema.Int,
  scanned_at: Schema.Date,
  tables: Schema.Array(
    Schema.Struct({
      ...TableInfo.fields,
      ...Curated,
      columns: Schema.Array(Schema.Struct({ ...ColumnInfo.fields, ...Curated, pii: Schema.NullOr(Schema.String) }))
    })
  )
})
