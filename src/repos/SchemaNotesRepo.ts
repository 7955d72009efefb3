import { SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schema } from "effect"
import { OrgId } from "../domain/Ids"
import { SemanticModelDocument } from "../domain/SemanticModel"
import { storeErrors } from "./StoreErrors"
import { tenantScope } from "./Tenant"

/** A table (column '') or column a note is about. */
const NoteTarget = Schema.Struct({ schema_name: Schema.String, table_name: Schema.String, column_name: Schema.String })
export type NoteTarget = typeof NoteTarget.Type

const DescriptionSource = Schema.Literal("manual", "generated")
const Endorsement = Schema.Literal("trusted", "deprecated")

const settable = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(Schema.NullOr(schema), { exact: true })
const NoteFields = Schema.Struct({
  description: settable(Schema.String),
  description_source: settable(DescriptionSource),
  type_override: settable(Schema.String),
  endorsement: settable(Endorsement),
  endorsement_note: settable(Schema.String)
})
export type NoteFields = typeof NoteFields.Type

const NoteRow = Schema.Struct({
  ...NoteTarget.fields,
  description: Schema.NullOr(Schema.String),
  description_source: Schema.NullOr(DescriptionSource),
  type_override: Schema.NullOr(Schema.String),
  endorsement: Schema.NullOr(Endorsement),
  endorsement_note: Schema.NullOr(Schema.String),
  updated_by: Schema.NullOr(Schema.String),
  updated_at: Schema.DateFromSelf
})
export type NoteRow = typeof NoteRow.Type

const SemanticModelRow = Schema.Struct({
  model: SemanticModelDocument,
  version: Schema.Number,
  source: DescriptionSource,
  updated_by: Schema.NullOr(Schema.String),
  updated_at: Schema.DateFromSelf
})
export type SemanticModelRow = typeof SemanticModelRow.Type

const OfConnection = Schema.Struct({ orgId: OrgId, connectionId: Schema.String })
const NotesWrite = Schema.Struct({
  ...OfConnection.fields,
  updatedBy: Schema.String,
  notes: Schema.Array(Schema.Struct({ target: NoteTarget, fields: NoteFields }))
})

/** Notes on tables and columns (descriptions, type fixes, endorsements) and semantic models, per connection of an org. */
export class SchemaNotesRepo extends Effect.Service<SchemaNotesRepo>()("sluice/SchemaNotesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)
    const failures = storeErrors("schema notes store")

    const notesOf = SqlSchema.findAll({
      Request: OfConnection,
      Result: NoteRow,
      execute: ({ orgId, connectionId }) =>
        sql`select schema_name, table_name, column_name, description, description_source, type_override, endorsement,
            endorsement_note, updated_by, updated_at
          from schema_notes where org_id = ${orgId} and connection_id = ${connectionId}
          order by schema_name, table_name, column_name`
    })
    const list = Effect.fn("SchemaNotesRepo.list")((orgId: OrgId, connectionId: string) => notesOf({ orgId, connectionId }).pipe(withOrg(orgId)), failures)

    const upsert = ({ orgId, connectionId, updatedBy, notes }: typeof NotesWrite.Encoded) =>
      Effect.forEach(
        notes,
        ({ target, fields }) => {
          const changes = { ...fields, updated_by: updatedBy, updated_at: new Date() }
          return sql`insert into schema_notes ${sql.insert({ org_id: orgId, connection_id: connectionId, ...target, ...changes })}
            on conflict (connection_id, schema_name, table_name, column_name) do update set ${sql.update(changes)}`
        },
        { discard: true }
      )

    const writeNotes = SqlSchema.void({ Request: NotesWrite, execute: upsert })
    /** Sets the given fields of each target's note (others keep their values), in one transaction. */
    const write = Effect.fn("SchemaNotesRepo.write")(
      (orgId: OrgId, connectionId: string, updatedBy: string, notes: typeof NotesWrite.Type.notes) => writeNotes({ orgId, connectionId, updatedBy, notes }).pipe(withOrg(orgId)),
      failures
    )

    const endorseOnly = SqlSchema.void({
      Request: NotesWrite,
      execute: (request) =>
        Effect.zipRight(
          sql`update schema_notes set endorsement = null, endorsement_note = null
            where org_id = ${request.orgId} and connection_id = ${request.connectionId} and (endorsement is not null or endorsement_note is not null)`,
          upsert(request)
        )
    })
    /** Replaces every endorsement of the connection with these, in one transaction; descriptions and type fixes stay. */
    const replaceEndorsements = Effect.fn("SchemaNotesRepo.replaceEndorsements")(
      (orgId: OrgId, connectionId: string, updatedBy: string, notes: typeof NotesWrite.Type.notes) => endorseOnly({ orgId, connectionId, updatedBy, notes }).pipe(withOrg(orgId)),
      failures
    )

    const modelOf = SqlSchema.findOne({
      Request: OfConnection,
      Result: SemanticModelRow,
      execute: ({ orgId, connectionId }) =>
        sql`select model, version, source, updated_by, updated_at from semantic_models where org_id = ${orgId} and connection_id = ${connectionId}`
    })
    const model = Effect.fn("SchemaNotesRepo.model")(
      (orgId: OrgId, connectionId: string) => modelOf({ orgId, connectionId }).pipe(Effect.map(Option.getOrNull), withOrg(orgId)),
      failures
    )

    const storeModel = SqlSchema.single({
      Request: Schema.Struct({ ...OfConnection.fields, model: SemanticModelDocument, source: DescriptionSource, updatedBy: Schema.String }),
      Result: SemanticModelRow,
      execute: ({ orgId, connectionId, model, source, updatedBy }) =>
        sql`insert into semantic_models (connection_id, org_id, model, source, updated_by)
          values (${connectionId}, ${orgId}, ${JSON.stringify(model)}::jsonb, ${source}, ${updatedBy})
          on conflict (connection_id) do update set model = excluded.model, source = excluded.source, updated_by = excluded.updated_by,
            version = semantic_models.version + 1, updated_at = date_trunc('milliseconds', now())
          returning model, version, source, updated_by, updated_at`
    })
    const putModel = Effect.fn("SchemaNotesRepo.putModel")(
      (orgId: OrgId, connectionId: string, model: SemanticModelDocument, source: "manual" | "generated", updatedBy: string) =>
        storeModel({ orgId, connectionId, model, source, updatedBy }).pipe(withOrg(orgId)),
      failures
    )

    return { list, write, replaceEndorsements, model, putModel } as const
  })
}) {}
