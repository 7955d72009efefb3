import { Effect, Schema } from "effect"
import { CreateSandbox, ExecuteCode } from "../domain/Sandbox"
import { ResourceId } from "../domain/Text"
import { Sandboxes } from "../services/Sandboxes"
import { defineTool, type ToolDefinition } from "./ToolDefinition"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

const CreateInput = Schema.Struct({
  connection_name: CreateSandbox.fields.connection_name.annotations({ description: "The connection its code queries (it may query no other); omitted: it names one per query" }),
  label: CreateSandbox.fields.label.annotations({ description: "A label to know it by" }),
  row_limit: CreateSandbox.fields.row_limit.annotations({ description: "The most rows one query of its code returns" }),
  timeout_seconds: CreateSandbox.fields.timeout_seconds.annotations({ description: "How long one execute may run (default 300)" })
}).annotations(strict)

const ExecuteInput = Schema.Struct({
  sandbox_id: ResourceId.annotations({ description: "The sandbox, from sandbox_create" }),
  code: ExecuteCode.fields.code.annotations({
    description: "Python to run; globals carry over between calls. `import sluice; sluice.query(sql)` (or `sluice.query_df(sql)` for a pandas DataFrame) reads data through the gateway, governed like query_database"
  }),
  timeout_seconds: ExecuteCode.fields.timeout_seconds.annotations({ description: "How long this call may run (default: the sandbox's)" })
}).annotations(strict)

const DeleteInput = Schema.Struct({ sandbox_id: ResourceId.annotations({ description: "The sandbox to delete" }) }).annotations(strict)

/** Sandboxes as tools: code next to the data, for a key (or an agent's run) that holds the execute scope. */
export const sandboxTools = Effect.gen(function* () {
  const sandboxes = yield* Sandboxes

  const create = defineTool({
    name: "sandbox_create",
    scope: "execute",
    title: "Create a Python sandbox",
    description:
      "Starts an isolated Python sandbox (pandas, numpy; no network) whose code can query data through the gateway as you, read-only and masked. Returns its id for sandbox_execute. Delete it with sandbox_delete when done; idle ones are snapshotted and resume on their next call.",
    input: CreateInput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: (args, call) => Effect.map(sandboxes.create(call.principal, args), (sandbox) => ({ text: JSON.stringify({ id: sandbox.id, status: sandbox.status, connection_name: sandbox.connection_name }) }))
  })

  const execute = defineTool({
    name: "sandbox_execute",
    scope: "execute",
    title: "Run Python in a sandbox",
    description: "Runs Python in a sandbox made by sandbox_create and returns what it printed and its error, if any. State carries over between calls, as in a notebook.",
    input: ExecuteInput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: (args, call) =>
      Effect.map(
        sandboxes.execute(call.principal, args.sandbox_id, { code: args.code, ...(args.timeout_seconds === undefined ? {} : { timeout_seconds: args.timeout_seconds }) }, (facts, sql, connection) => call.report(facts, sql, connection)),
        (result) => ({ text: JSON.stringify(result), structured: { ...result } })
      )
  })

  const remove = defineTool({
    name: "sandbox_delete",
    scope: "execute",
    title: "Delete a sandbox",
    description: "Ends a sandbox's process and deletes its files and snapshot.",
    input: DeleteInput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    run: (args, call) => Effect.map(sandboxes.remove(call.principal, args.sandbox_id), (removed) => ({ text: JSON.stringify(removed) }))
  })

  const tools: ReadonlyArray<ToolDefinition> = [create, execute, remove]
  return tools
})
