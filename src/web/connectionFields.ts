import { SchemaAST } from "effect"
import { ConnectionInput, SECRET_FIELDS } from "../domain/Connection"

export interface FormField {
  readonly name: string
  readonly required: boolean
  readonly kind: "text" | "number" | "secret" | "secret-text" | "choice"
  readonly choices: ReadonlyArray<string>
}

// Settings every type shares; the form shows the fields that say where the database is and who connects.
const SHARED = new Set(["db_type", "name", "description", "tags", "query_timeout", "connection_timeout", "max_rows", "schema_include", "schema_exclude", "schema_refresh_interval", "blocked_tables", "allowed_tables", "result_cache_ttl", "tls", "ssh_tunnel"])

const underlying = (ast: SchemaAST.AST): SchemaAST.AST =>
  SchemaAST.isRefinement(ast) ? underlying(ast.from) : SchemaAST.isTransformation(ast) ? underlying(ast.to) : ast

const literalsOf = (ast: SchemaAST.AST): ReadonlyArray<string> =>
  SchemaAST.isUnion(ast) ? ast.types.flatMap((t) => literalsOf(underlying(t))) : SchemaAST.isLiteral(ast) ? [String(ast.literal)] : []

/** The fields a db_type's connection takes, read from the same Schema the gateway validates with. */
export const fieldsFor = (dbType: string): ReadonlyArray<FormField> => {
  const member = ConnectionInput.members.find((m) => m.fields.db_type.literals[0] === dbType)
  if (member === undefined) return []
  const ast = underlying(member.ast)
  if (!SchemaAST.isTypeLiteral(ast)) return []
  return ast.propertySignatures
    .filter((p) => typeof p.name === "string" && !SHARED.has(p.name))
    .map((p): FormField => {
      const name = String(p.name)
      const type = underlying(p.type)
      const choices = literalsOf(type)
      const secret = (SECRET_FIELDS as ReadonlyArray<string>).includes(name)
      return {
        name,
        required: !p.isOptional,
        kind: secret ? (name === "credentials_json" ? "secret-text" : "secret") : choices.length > 0 ? "choice" : SchemaAST.isNumberKeyword(type) ? "number" : "text",
        choices
      }
    })
}

export const DB_TYPES: ReadonlyArray<string> = ConnectionInput.members.map((m) => m.fields.db_type.literals[0])

/** A field's label: its name in words. */
export const labelOf = (name: string) => (name === "http_path" ? "HTTP path" : name.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase()))

const typeLiteralOf = (ast: SchemaAST.AST): SchemaAST.TypeLiteral | undefined => {
  const inner = underlying(ast)
  if (SchemaAST.isTypeLiteral(inner)) return inner
  return SchemaAST.isUnion(inner) ? inner.types.map(typeLiteralOf).find((t) => t !== undefined) : undefined
}

const pick = (shape: SchemaAST.TypeLiteral, value: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(
    shape.propertySignatures.flatMap((p) => {
      const field = value[String(p.name)]
      if (field === null || field === undefined) return []
      const nested = typeof field === "object" && !Array.isArray(field) ? typeLiteralOf(p.type) : undefined
      return [[String(p.name), nested === undefined ? field : pick(nested, field as Record<string, unknown>)]]
    })
  )

/**
 * A stored connection as the input that would recreate it: only the fields its db_type's input takes
 * (no flags like `password_set`, no timestamps). Secrets are absent, so an edit keeps the stored ones.
 */
export const inputOf = (connection: { readonly db_type: string }): Record<string, unknown> => {
  const member = ConnectionInput.members.find((m) => m.fields.db_type.literals[0] === connection.db_type)
  const shape = member === undefined ? undefined : typeLiteralOf(member.ast)
  return shape === undefined ? {} : pick(shape, connection as Record<string, unknown>)
}
