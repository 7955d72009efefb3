import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import { tenantScope } from "./Tenant"

/** A table (column '') or column a note is about. */
export interface NoteTarget {
  readonly schema_name: string
  readonly table_name: string
  readonly column_name: string
}

export interface NoteFields {
  readonly description?: string | null
  readonly description_source?: "manual" | "generated" | null
  readonly type_override?: string | null
  readonly endorsement?: "trusted" | "deprecated" | null
  readonly endorsement_note?: string | null
}

export interface NoteRow extends NoteTarget {
  readonly description: string | null
  readonly description_source: "manual" | "generated" | null
  readonly type_override: string | null
  readonly endorsement: "trusted" | "deprecated" | null
  readonly endorsement_note: string | null
  readonly updated_by: string | null
  readonly updated_at: Date
}

export interface SemanticModelRow {
  readonly model: unknown
  readonly version: number
  readonly source: "manual" | "generated"
  readonly updated_by: string | null
  readonly updated_at: Date
}

/** Notes on tables and columns (descriptions, type fixes, endorsements) and semantic models, per connection of an org. */
export class SchemaNotesRepo extends Effect.Service<SchemaNotesRepo>()("sluice/SchemaNotesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const withOrg = tenantScope(sql)

    const list = (orgId: OrgId, connectionId: string) =>
      sql<NoteRow>`select schema_name, table_name, column_name, description, description_source, type_override, endorsement,
          endorsement_note, updated_by, updated_at
        from schema_notes where org_id = ${orgId} and connection_id = ${connectionId}
        order by schema_name, table_name, column_name`.pipe(withOrg(orgId))

    const upsert = (orgId: OrgId, connectionId: string, updatedBy: string, notes: ReadonlyArray<{ readonly target: NoteTarget; readonly fields: NoteFields }>) =>
      Effect.forEach(
        notes,
        ({ target, fields }) => {
          const changes = { ...fields, updated_by: updatedBy, updated_at: new Date() }
          return sql`insert into schema_notes ${sql.insert({ org_id: orgId, connection_id: connectionId, ...target, ...changes })}
            on conflict (connection_id, schema_name, table_name, column_name) do update set ${sql.update(changes)}`
        },
        { discard: true }
      )

    /** Sets the given fields of each target's note (others keep their values), in one transaction. */
    const write = (orgId: OrgId, connectionId: string, updatedBy: string, notes: ReadonlyArray<{ readonly target: NoteTarget; readonly fields: NoteFields }>) =>
      upsert(orgId, connectionId, updatedBy, notes).pipe(withOrg(orgId))

    /** Replaces every endorsement of the connection with these, in one transaction; descriptions and type fixes stay. */
    const replaceEndorsements = (orgId: OrgId, connectionId: string, updatedBy: string, notes: ReadonlyArray<{ readonly target: NoteTarget; readonly fields: NoteFields }>) =>
      Effect.zipRight(
        sql`update schema_notes set endorsement = null, endorsement_note = null
          where org_id = ${orgId} and connection_id = ${connectionId} and (endorsement is not null or endorsement_note is not null)`,
        upsert(orgId, connectionId, updatedBy, notes)
      ).pipe(withOrg(orgId))

    const model = (orgId: OrgId, connectionId: string) =>
      sql<SemanticModelRow>`select model, version, source, updated_by, updated_at from semantic_models
        where org_id = ${orgId} and connection_id = ${connectionId}`.pipe(
        Effect.map((rows) => rows[0] ?? null),
        withOrg(orgId)
      )

    const putModel = (orgId: OrgId, connectionId: string, model: unknown, source: "manual" | "generated", updatedBy: string) =>
      sql<SemanticModelRow>`insert into semantic_models (connection_id, org_id, model, source, updated_by)
        values (${connectionId}, ${orgId}, ${JSON.stringify(model)}::jsonb, ${source}, ${updatedBy})
        on conflict (connection_id) do update set model = excluded.model, source = excluded.source, updated_by = excluded.updated_by,
          version = semantic_models.version + 1, updated_at = date_trunc('milliseconds', now())
        returning model, version, source, updated_by, updated_at`.pipe(
        Effect.map((rows) => rows[0]!),
        withOrg(orgId)
      )

    return { list, write, replaceEndorsements, model, putModel } as const
  })
}) {}
