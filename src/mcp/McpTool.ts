import type { Effect } from "effect"
import { JSONSchema, type Schema } from "effect"
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
}

/** The call's context: who calls, and where its governed queries report their audit facts. */
export interface ToolCall {
  readonly principal: Principal
  readonly requestId: string
  /** A governed query's audit facts, with its SQL when it is not the call's own `sql` argument. */
  readonly report: (facts: QueryFacts, sql?: string) => Effect.Effect<void>
}

export interface McpTool<I = any> {
  readonly name: string
  /** The scope a key needs to see and call the tool; a tool cannot be declared without one. */
  readonly scope: Scope
  readonly title: string
  readonly description: string
  readonly input: Schema.Schema<I, any>
  readonly output?: Schema.Schema<any, any>
  readonly annotations: ToolAnnotations
  readonly run: (args: I, call: ToolCall) => Effect.Effect<ToolOutput, ToolFailure>
}

/** A read-only tool that returns customer data or metadata: it never changes anything and may be retried. */
export const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }

type ObjectJsonSchema = { type: "object"; [key: string]: unknown }
const objectJsonSchema = (schema: Schema.Schema<any, any>) => JSONSchema.make(schema) as unknown as ObjectJsonSchema

/** The tool as `tools/list` shows it, JSON Schemas derived from the same Effect schemas that decode the call. */
export const describeTool = (tool: McpTool) => ({
  name: tool.name,
  title: tool.title,
  description: tool.description,
  inputSchema: objectJsonSchema(tool.input),
  ...(tool.output !== undefined ? { outputSchema: objectJsonSchema(tool.output) } : {}),
  annotations: { title: tool.title, ...tool.annotations }
})
