import { Duration, Effect, Schema } from "effect"
import { AgentRun, type AgentRun as Run, StartAgentRun, TERMINAL_STATUSES } from "../domain/AgentRun"
import { ConnectionName } from "../domain/Connection"
import { AgentRuns } from "../services/AgentRuns"
import { defineTool } from "./ToolDefinition"

const POLL = Duration.millis(250)
const DEFAULT_WAIT_SECONDS = 50

const RunAgentInput = Schema.Struct({
  prompt: StartAgentRun.fields.prompt.annotations({ description: "The question for the agent, in plain language" }),
  connection_name: Schema.optionalWith(ConnectionName.annotations({ description: "The connection the agent should use, as list_connections names it" }), { exact: true }),
  max_turns: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, 200, { message: () => "max_turns must be an integer from 1 to 200" })).annotations({
      description: "The most model calls the agent may make (default 50)"
    }),
    { exact: true }
  ),
  wait_seconds: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, 300, { message: () => "wait_seconds must be an integer from 1 to 300" })).annotations({
      description: `How long to wait for the answer (default ${DEFAULT_WAIT_SECONDS}); a run still going then is followed over REST`
    }),
    { exact: true }
  )
}).annotations({ parseOptions: { onExcessProperty: "error" } })

const WAITING: ReadonlySet<Run["status"]> = new Set(["waiting_for_user", "waiting_for_query_approval"])

const runText = (run: Run) => {
  switch (run.status) {
    case "completed":
      return run.answer ?? ""
    case "waiting_for_user":
      return `The agent asks: ${run.pending?.kind === "question" ? run.pending.question : ""}\nAnswer with PATCH /api/agent-runs/${run.id} {"action":"answer","answer":"…"}.`
    case "waiting_for_query_approval":
      return run.pending?.kind === "query_approval"
        ? `The agent wants to run a query ${run.pending.reason}:\n${run.pending.sql}\nA person with the write scope approves or declines it: on the Chat page, or PATCH /api/agent-runs/${run.id} {"action":"approve"} or {"action":"decline"}.`
        : `The run ${run.id} waits for a query's approval.`
    case "failed":
    case "cancelled":
      return `The run ${run.status}: ${run.error?.code ?? run.status}: ${run.error?.message ?? ""}`
    default:
      return `The run ${run.id} is still ${run.status}; follow it at GET /api/agent-runs/${run.id}/events.`
  }
}

/** The built-in agent as a tool for other agents: it runs with this key's read and query rights, as a durable run. */
export const agentTools = Effect.gen(function* () {
  const runs = yield* AgentRuns

  const runAgent = defineTool({
    name: "run_agent",
    scope: "agent:run",
    title: "Ask Sluice's data agent",
    description:
      "Starts Sluice's built-in data agent on a question: it finds tables, runs governed read-only queries (as this key, PII masked) and answers. Waits for the answer up to wait_seconds; if the agent asks a question, waits for a costly query's approval or is still working, says so with the run's id. The run is recorded with its steps, tokens and cost.",
    input: RunAgentInput,
    output: AgentRun,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    run: (args, call) =>
      Effect.gen(function* () {
        const { wait_seconds: wait, ...input } = args
        const started = yield* runs.start(call.principal, input)
        const deadline = Date.now() + (wait ?? DEFAULT_WAIT_SECONDS) * 1000
        let run = started
        while (!TERMINAL_STATUSES.has(run.status) && !WAITING.has(run.status) && Date.now() < deadline) {
          yield* Effect.sleep(POLL)
          run = yield* runs.get(call.principal, started.id)
        }
        return { text: runText(run), structured: Schema.encodeSync(AgentRun)(run) as Record<string, unknown> }
      })
  })

  return [runAgent]
})
