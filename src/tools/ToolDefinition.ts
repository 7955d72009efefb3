import type { Scope as EffectScope } from "effect"
import { Effect, JSONSchema, Option, type Schema, SchemaAST } from "effect"
import type { Principal } from "../domain/Principal"
import type { Scope } from "../domain/Scope"
import type { QueryFacts } from "../governance/GovernedExecutor"

/** What a tool says about itself to a client (MCP tool annotations), matching what it really does. */
export interface ToolAnnotations {
  readonly readOnlyHint: boolean
  readonly destructiveHint: boolean
  readonly idempotentHint: boolean
  readonly openWorldHint: boolean
}

/** A successful call: text for the model, and the same result as structured content where the tool declares an output schema. */
export interface ToolOutput {
  readonly text: string
  readonly structured?: Record<string, unknown>
}

/** A refusal or failure the model is shown as a tool error: a code and a sanitized message. */
export interface ToolFailure {
  readonly code: string
  readonly message: string
  /** Set when the gate turned the call away before any of the tool ran (its scope, a limit, a limit store that is down). */
  readonly atGate?: true
}

/** The call's context: who calls, and where its governed queries report their audit facts. */
export interface ToolCall {
  readonly principal: Principal
  /** An MCP client, or the built-in agent (whose model has read rows: what it writes is never trusted as is). */
  readonly caller: "client" | "agent_run"
  readonly requestId: string
  /** A governed query's audit facts, with its SQL when it is not the call's own `sql` argument. */
  readonly report: (facts: QueryFacts, sql?: string, connection?: string) => Effect.Effect<void>
}

export interface ToolDefinition<I = any> {
  readonly name: string
  /** The scope a key needs to see and call the tool; a tool cannot be declared without one. */
  readonly scope: Scope
  readonly title: string
  readonly description: string
  readonly input: Schema.Schema<I, any>
  readonly output?: Schema.Schema<any, any>
  readonly annotations: ToolAnnotations
  /** Besides its scope, what a caller must hold to be offered the tool (its `run` checks it again, failing closed). */
  readonly offeredTo?: (principal: Principal) => boolean
  /** Runs in the request's scope: results it holds are given back once the reply is written. */
  readonly run: (args: I, call: ToolCall) => Effect.Effect<ToolOutput, ToolFailure, EffectScope.Scope>
}

/** Whether the principal is offered the tool: its scope, and whatever else the tool asks of a caller. */
export const offered = (tool: ToolDefinition, principal: Principal) => principal.scopes.includes(tool.scope) && (tool.offeredTo?.(principal) ?? true)

/** Any service error of ours carries a code and a message already fit for a caller. */
export const asFailure = (error: { readonly code: string; readonly message: string }): ToolFailure => ({ code: error.code, message: error.message })

/**
 * The one way a tool family declares a tool: its `run` fails with any error of ours (a code and a
 * message), and that becomes the tool's failure here, once, as the model or client sees it.
 */
export const defineTool = <I>(
  tool: Omit<ToolDefinition<I>, "run"> & {
    readonly run: (args: I, call: ToolCall) => Effect.Effect<ToolOutput, { readonly code: string; readonly message: string }, EffectScope.Scope>
  }
): ToolDefinition<I> => ({ ...tool, run: (args, call) => Effect.mapError(tool.run(args, call), asFailure) })

/** A read-only tool that returns customer data or metadata: it never changes anything and may be retried. */
export const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }

type JsonObject = { [key: string]: unknown }
type ObjectJsonSchema = { type: "object"; [key: string]: unknown }
const objectJsonSchema = (schema: Schema.Schema<any, any>) => JSONSchema.make(schema) as unknown as ObjectJsonSchema

/** The description written on an argument itself (its property or its schema's outermost annotation), not one a refinement derived. */
const ownDescription = (property: SchemaAST.PropertySignature) =>
  Option.orElse(SchemaAST.getDescriptionAnnotation(property), () => SchemaAST.getDescriptionAnnotation(property.type))

/**
 * A tool's arguments as clients label them: each argument under its own name (no title a refinement
 * derived, such as "maxLength(100000)") with the description written for it, and no $refs to follow.
 */
const argumentsSchema = (input: Schema.Schema<any, any>): ObjectJsonSchema => {
  const { $defs = {}, properties = {}, ...schema } = objectJsonSchema(input) as ObjectJsonSchema & { $defs?: Record<string, JsonObject>; properties?: Record<string, JsonObject> }
  const inline = ({ $ref, ...rest }: JsonObject): JsonObject =>
    typeof $ref === "string" ? { ...$defs[$ref.slice("#/$defs/".length)], ...rest } : rest
  const described = new Map(
    SchemaAST.isTypeLiteral(input.ast) ? input.ast.propertySignatures.map((p) => [String(p.name), Option.getOrUndefined(ownDescription(p))]) : []
  )
  const args = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => {
      const { title: _title, description, ...constraints } = inline(property)
      return [name, { ...constraints, description: described.get(name) ?? description }]
    })
  )
  return { ...schema, properties: args }
}

/** The tool as `tools/list` shows it, JSON Schemas derived from the same Effect schemas that decode the call. */
export const describeTool = (tool: ToolDefinition) => ({
  name: tool.name,
  title: tool.title,
  description: tool.description,
  inputSchema: argumentsSchema(tool.input),
  ...(tool.output !== undefined ? { outputSchema: objectJsonSchema(tool.output) } : {}),
  annotations: { title: tool.title, ...tool.annotations }
})
