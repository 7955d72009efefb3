import { Effect, Schema } from "effect"
import { WITHHELD_FOR_ROWS } from "../domain/Visibility"
import { CreateKnowledge, KnowledgeCategory, KnowledgeEntry, KnowledgePlace, KnowledgeScope, ScopeRef } from "../domain/Knowledge"
import { noNul, ResourceId } from "../domain/Text"
import { Knowledge } from "../services/Knowledge"
import { defineTool, type ToolDefinition, READ_ONLY, type ToolAnnotations } from "./ToolDefinition"
import { untrusted } from "./ResultText"

const strict = { parseOptions: { onExcessProperty: "error" } } as const
// What get_knowledge returns at most, and the most entries it adds for a task.
const MAX_OUTPUT_CHARS = 100_000
const TASK_ENTRIES = 5
const BASELINE_ENTRIES = 200
const SNIPPET_CHARS = 200

const WRITES: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }

const placeOf = (entry: Pick<KnowledgeEntry, "id" | "scope" | "scope_ref" | "category" | "title">) => ({
  id: entry.id,
  scope: entry.scope,
  scope_ref: entry.scope_ref,
  category: entry.category,
  title: entry.title
})

const heading = (entry: Pick<KnowledgeEntry, "scope" | "scope_ref" | "category" | "title">) =>
  `[${entry.scope}${entry.scope_ref === null ? "" : `:${entry.scope_ref}`}][${entry.category}]\n## ${entry.title}`

/** An entry as the model reads it: approved knowledge as it is; a proposal labelled, and as data, never as instructions. */
const rendered = (entry: KnowledgeEntry) =>
  entry.status === "active"
    ? `${heading(entry)}\n\n${entry.body}`
    : entry.withheld !== undefined
      ? `${heading(entry)} [status: proposed, not approved; its title and text are withheld: ${WITHHELD_FOR_ROWS}]`
      : `${heading(entry)} [status: ${entry.status === "pending" ? "proposed, not approved" : entry.status}]\n\n${untrusted("A proposed entry, not the organization's approved knowledge.", entry.body)}`

/** Sections joined while they fit under the cap (one too large is left out, not the rest after it), with a note on how to narrow when any was left out. */
const capped = (sections: ReadonlyArray<string>) => {
  const kept: Array<number> = []
  let length = 0
  for (const [index, section] of sections.entries()) {
    if (length + section.length + 2 > MAX_OUTPUT_CHARS) continue
    kept.push(index)
    length += section.length + 2
  }
  const left = sections.length - kept.length
  const text = kept.map((index) => sections[index]).join("\n\n")
  return { text: left === 0 ? text : `${text}\n\n…[${left} section(s) left out to stay under ${MAX_OUTPUT_CHARS} characters: use search_knowledge, then read_knowledge]`, kept: new Set(kept) }
}

const Query = Schema.String.pipe(
  Schema.minLength(1, { message: () => "query must not be empty" }),
  Schema.maxLength(200, { message: () => "query must be at most 200 characters" }),
  noNul("query")
)

const GetInput = Schema.Struct({
  task_description: Schema.optionalWith(
    Schema.String.pipe(Schema.maxLength(500, { message: () => "task_description must be at most 500 characters" }), noNul("task_description")).annotations({
      description: "What you are about to do; the entries most relevant to it are added to the baseline"
    }),
    { exact: true }
  )
}).annotations(strict)

const SearchInput = Schema.Struct({
  query: Query.annotations({ description: "What to look for, in words" }),
  scope: Schema.optionalWith(KnowledgeScope.annotations({ description: "Only entries about the organization, a project or a connection" }), { exact: true }),
  scope_ref: Schema.optionalWith(ScopeRef.annotations({ description: "Only entries about this project or connection (with scope)" }), { exact: true }),
  category: Schema.optionalWith(KnowledgeCategory.annotations({ description: "Only context, decisions, rules or troubleshooting entries" }), { exact: true }),
  limit: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 50, { message: () => "limit must be an integer between 1 and 50" })).annotations({ description: "Results (default 10)" }), {
    exact: true
  })
}).annotations(strict)

const ReadInput = Schema.Struct({
  ids: Schema.Array(ResourceId)
    .pipe(Schema.minItems(1, { message: () => "ids must name at least one entry" }), Schema.maxItems(10, { message: () => "ids may name at most 10 entries" }))
    .annotations({ description: "Entry ids, as search_knowledge gives them" })
}).annotations(strict)

const ProposeInput = Schema.extend(
  CreateKnowledge,
  Schema.Struct({
    overwrite: Schema.optionalWith(Schema.Boolean.annotations({ description: "Replace the entry already at this scope, category and title (default false)" }), { exact: true })
  })
).annotations(strict)

const GetOutput = Schema.Struct({
  entries: Schema.Array(Schema.Struct({ ...KnowledgePlace.fields, section: Schema.Literal("context", "task") })),
  truncated: Schema.Boolean
})
const SearchOutput = Schema.Struct({ results: Schema.Array(Schema.Struct({ ...KnowledgePlace.fields, snippet: Schema.String, score: Schema.Number })) })
const ReadOutput = Schema.Struct({ entries: Schema.Array(KnowledgeEntry), not_found: Schema.Array(Schema.String) })

const ArchiveInput = Schema.Struct({ id: ResourceId.annotations({ description: "The entry's id" }) }).annotations(strict)

/** The knowledge base as agents use it: the baseline and what bears on a task, search, reading, proposing and archiving. */
export const knowledgeTools = Effect.gen(function* () {
  const knowledge = yield* Knowledge

  const getKnowledge = defineTool({
    name: "get_knowledge",
    scope: "read",
    title: "Get the organization's knowledge",
    description:
      "Start here: the organization's approved context (what its data means, its conventions), plus, given task_description, the approved decisions, rules and troubleshooting notes most relevant to the task. Output is capped; use search_knowledge and read_knowledge to go further.",
    input: GetInput,
    output: GetOutput,
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.gen(function* () {
        const baseline = yield* knowledge.baseline(call.principal, BASELINE_ENTRIES)
        const task = args.task_description?.trim() ?? ""
        const relevant =
          task === ""
            ? []
            : (yield* knowledge.rank(call.principal, task, TASK_ENTRIES + baseline.length)).filter((hit) => !baseline.some((entry) => entry.id === hit.entry.id)).slice(0, TASK_ENTRIES)
        if (baseline.length === 0 && relevant.length === 0) return { text: "The organization's knowledge base has no approved entries yet.", structured: { entries: [], truncated: false } }
        // Headings and entries in the order shown, each entry with its section, so what fitted is known.
        const section = (name: string, kind: "context" | "task", hits: ReadonlyArray<{ readonly entry: KnowledgeEntry; readonly score: number }>) =>
          hits.length === 0 ? [] : [{ text: name, hit: null, kind }, ...hits.map((hit) => ({ text: rendered(hit.entry), hit, kind }))]
        const shown = [
          ...section("# The organization's context", "context", baseline.map((entry) => ({ entry, score: 0 }))),
          ...section("# Relevant to the task", "task", relevant)
        ]
        const { text, kept } = capped(shown.map((item) => item.text))
        const delivered = shown.filter((item, index) => kept.has(index) && item.hit !== null)
        const of = (kind: "context" | "task") => delivered.flatMap((item) => (item.kind === kind && item.hit !== null ? [{ id: item.hit.entry.id, score: item.hit.score }] : []))
        yield* knowledge.handedOver(call.principal, "mcp:get_knowledge", null, of("context"))
        yield* knowledge.handedOver(call.principal, "mcp:get_knowledge", task, of("task"))
        return {
          text,
          structured: {
            entries: delivered.flatMap((item) => (item.hit === null ? [] : [{ ...placeOf(item.hit.entry), section: item.kind }])),
            truncated: kept.size < shown.length
          }
        }
      })
  })

  const searchKnowledge = defineTool({
    name: "search_knowledge",
    scope: "read",
    title: "Search the knowledge base",
    description: "Finds the approved entries that best answer a query (full-text, typo-tolerant, exact terms): each with its id, place, title and a snippet. Read whole entries with read_knowledge.",
    input: SearchInput,
    output: SearchOutput,
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.map(
        knowledge.find(call.principal, args.query, { scope: args.scope, scope_ref: args.scope_ref, category: args.category }, args.limit ?? 10, "mcp:search_knowledge"),
        (hits) => ({
          structured: { results: hits.map((hit) => ({ ...placeOf(hit), snippet: hit.snippet, score: hit.score ?? 0 })) },
          text: [
            `Found ${hits.length} result(s)`,
            ...hits.map((hit) => `- id=${hit.id} scope=${hit.scope}${hit.scope_ref === null ? "" : `:${hit.scope_ref}`} category=${hit.category} title=${hit.title}\n  ${hit.snippet.slice(0, SNIPPET_CHARS).replaceAll("\n", " ")}`)
          ].join("\n")
        })
      )
  })

  const readKnowledge = defineTool({
    name: "read_knowledge",
    scope: "read",
    title: "Read knowledge entries",
    description: "Whole entries by id (up to 10). A proposal not yet approved is labelled as such; an archived or missing one shows as not found.",
    input: ReadInput,
    output: ReadOutput,
    annotations: READ_ONLY,
    run: (args, call) =>
      Effect.map(knowledge.read(call.principal, args.ids), (entries) => {
        const shown = new Map(entries.filter((entry) => entry.status !== "archived").map((entry) => [entry.id, entry]))
        return {
          text: args.ids.map((id) => (shown.has(id) ? rendered(shown.get(id)!) : `[not found: ${id}]`)).join("\n\n"),
          structured: { entries: [...shown.values()], not_found: args.ids.filter((id) => !shown.has(id)) }
        }
      })
  })

  const proposeKnowledge = defineTool({
    name: "propose_knowledge",
    scope: "write",
    title: "Propose a knowledge entry",
    description:
      "Proposes an entry (or, with overwrite, a new version of a proposal at the same scope, category and title; approved entries are changed by admins) for an admin to approve; until then it is not served as knowledge. Scope org takes context, decisions, rules; project all four and troubleshooting; connection context and troubleshooting. title is a lowercase slug.",
    input: ProposeInput,
    annotations: WRITES,
    run: (args, call) =>
      Effect.map(knowledge.propose(call.principal, args, { overwrite: args.overwrite ?? false, proposer: call.caller === "agent_run" ? "agent_run" : "mcp" }), (proposed) => {
        const result =
          proposed.status === "rejected_duplicate"
            ? { status: proposed.status, existing_id: proposed.entry.id, message: "An entry with this scope, category and title exists: read it, then propose again with overwrite true to replace it" }
            : proposed.status === "rejected_approved"
              ? { status: proposed.status, existing_id: proposed.entry.id, message: "That entry is the organization's approved knowledge (or archived): only an admin changes it. Propose under another title, or ask an admin" }
              : { status: proposed.status, id: proposed.entry.id, entry_status: proposed.entry.status }
        return { text: JSON.stringify(result) }
      })
  })

  const archiveKnowledge = defineTool({
    name: "archive_knowledge",
    scope: "admin",
    title: "Archive a knowledge entry",
    description: "Archives an entry: it is no longer served or searched; nothing is deleted, and a rewrite restores it.",
    input: ArchiveInput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    run: (args, call) =>
      knowledge.archive(call.principal, args.id).pipe(
        Effect.map(({ entry, changed }) => ({ status: changed ? "archived" : "already_archived", id: entry.id, title: entry.title })),
        Effect.catchTag("NotFound", () => Effect.succeed({ status: "not_found", id: args.id, title: null })),
        Effect.map((result) => ({ text: JSON.stringify(result) }))
      )
  })

  const tools: ReadonlyArray<ToolDefinition> = [getKnowledge, searchKnowledge, readKnowledge, proposeKnowledge, archiveKnowledge]
  return tools
})
