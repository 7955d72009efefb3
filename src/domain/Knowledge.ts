import { Schema } from "effect"
import { CONNECTION_NAME_PATTERN } from "./Connection"
import { PROJECT_NAME_PATTERN } from "./Project"
import { noNul, ResourceId } from "./Text"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const KnowledgeScope = Schema.Literal("org", "project", "connection")
export type KnowledgeScope = typeof KnowledgeScope.Type

export const KnowledgeCategory = Schema.Literal("context", "decisions", "rules", "troubleshooting")
export type KnowledgeCategory = typeof KnowledgeCategory.Type

/** Which categories each scope takes: the organization's context, decisions and rules; a project's anything; a connection's context and its troubles. */
export const CATEGORIES_OF: Readonly<Record<KnowledgeScope, ReadonlyArray<KnowledgeCategory>>> = {
  org: ["context", "decisions", "rules"],
  project: ["context", "decisions", "rules", "troubleshooting"],
  connection: ["context", "troubleshooting"]
}

export const KnowledgeStatus = Schema.Literal("pending", "active", "archived")
export type KnowledgeStatus = typeof KnowledgeStatus.Type

/** The most a body may hold, in UTF-8 bytes: larger is refused with 413 (an entry is read into prompts whole). */
export const KNOWLEDGE_BODY_MAX_BYTES = 256 * 1024

export const KnowledgeTitle = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, { message: () => "title must be a lowercase slug: letters a-z, digits and single hyphens, like revenue-definition" }),
  Schema.maxLength(120, { message: () => "title must be at most 120 characters" })
)

export const ScopeRef = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_./:-]{1,200}$/, { message: () => "scope_ref must be 1 to 200 of A-Z a-z 0-9 _ . / : -" })
)

// The request cap bounds it first; the service refuses bodies over KNOWLEDGE_BODY_MAX_BYTES with 413.
const Body = Schema.String.pipe(
  noNul("body"),
  Schema.minLength(1, { message: () => "body is required", description: "What the organization knows, in markdown (at most 256 KiB)" })
)

/** Scope, scope_ref and category agree: scope_ref names the project or connection, and org has none; the category is one the scope takes. */
const placed = <S extends Schema.Schema.Any>(schema: S) =>
  schema.pipe(
    Schema.filter((entry: { readonly scope: KnowledgeScope; readonly scope_ref?: string | null | undefined; readonly category: KnowledgeCategory }) => {
      const ref = entry.scope_ref ?? null
      if (entry.scope === "org" && ref !== null) return "scope_ref must be absent for scope org"
      if (entry.scope !== "org" && ref === null) return `scope_ref is required for scope ${entry.scope}: the ${entry.scope}'s name`
      const pattern = entry.scope === "project" ? PROJECT_NAME_PATTERN : CONNECTION_NAME_PATTERN
      if (ref !== null && !pattern.test(ref)) return `scope_ref of scope ${entry.scope} must be a ${entry.scope}'s name: 1 to 64 letters, digits, '_' or '-'`
      if (!CATEGORIES_OF[entry.scope].includes(entry.category)) return `category ${entry.category} is not one scope ${entry.scope} takes: ${CATEGORIES_OF[entry.scope].join(", ")}`
      return true
    })
  )

export const CreateKnowledge = placed(
  Schema.Struct({
    scope: KnowledgeScope.annotations({ description: "What the entry is about: the whole organization, one project, or one connection" }),
    scope_ref: Schema.optionalWith(Schema.NullOr(ScopeRef).annotations({ description: "The project's or connection's name; none for scope org" }), { exact: true }),
    category: KnowledgeCategory.annotations({ description: "context (what things mean), decisions, rules, or troubleshooting" }),
    title: KnowledgeTitle.annotations({ description: "A lowercase slug naming the entry, unique in its scope and category, like net-revenue-definition" }),
    body: Body
  }).annotations(strict)
)
export type CreateKnowledge = typeof CreateKnowledge.Type

/** A new version of an entry: everything it says, as a whole. */
export const UpdateKnowledge = CreateKnowledge
export type UpdateKnowledge = typeof UpdateKnowledge.Type

// Where an entry is: what it is about, its category and its title.
const placeFields = { scope: KnowledgeScope, scope_ref: Schema.NullOr(Schema.String), category: KnowledgeCategory, title: Schema.String }

/** An entry by its id and place, as lists and tools name it. */
export const KnowledgePlace = Schema.Struct({ id: Schema.String, ...placeFields })

export const KnowledgeEntry = Schema.Struct({
  ...KnowledgePlace.fields,
  body: Schema.String,
  status: KnowledgeStatus,
  /** An agent proposed it (MCP propose_knowledge or the built-in agent). */
  proposed_by_agent: Schema.Boolean,
  bytes: Schema.Int,
  view_count: Schema.Int,
  version: Schema.Int,
  created_by: Schema.String,
  updated_by: Schema.String,
  approved_by: Schema.NullOr(Schema.String),
  approved_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  /** What is left out for this caller: an agent's proposal to a caller without the query scope (a model wrote it, perhaps after reading rows). */
  withheld: Schema.optional(Schema.Array(Schema.Literal("title", "body")))
})
export type KnowledgeEntry = typeof KnowledgeEntry.Type

/** An entry in a list: its body cut to a snippet; with a search, its rank's score too. */
export const KnowledgeListItem = Schema.Struct({
  ...KnowledgeEntry.omit("body").fields,
  snippet: Schema.String,
  score: Schema.NullOr(Schema.Number)
})
export type KnowledgeListItem = typeof KnowledgeListItem.Type

/** One earlier version of an entry, as it was before an edit replaced it. */
export const KnowledgeEdit = Schema.Struct({
  version: Schema.Int,
  ...placeFields,
  body: Schema.String,
  status: KnowledgeStatus,
  withheld: Schema.optional(Schema.Array(Schema.Literal("title", "body"))),
  /** Who wrote this version, and when. */
  edited_by: Schema.String,
  edited_at: Schema.Date,
  /** Who replaced it, and when. */
  replaced_by: Schema.String,
  replaced_at: Schema.Date
})
export type KnowledgeEdit = typeof KnowledgeEdit.Type

/** An entry delivered for a search or a task: which, for what, at which rank, to whom. */
export const KnowledgeRetrieval = Schema.Struct({
  entry_id: Schema.String,
  title: Schema.String,
  source: Schema.String,
  query: Schema.NullOr(Schema.String),
  rank: Schema.Int,
  score: Schema.Number,
  principal: Schema.String,
  key_id: Schema.NullOr(Schema.String),
  retrieved_at: Schema.Date
})
export type KnowledgeRetrieval = typeof KnowledgeRetrieval.Type

export const KnowledgeUsage = Schema.Struct({
  entry_id: Schema.String,
  title: Schema.String,
  scope: KnowledgeScope,
  scope_ref: Schema.NullOr(Schema.String),
  category: KnowledgeCategory,
  status: KnowledgeStatus,
  view_count: Schema.Int,
  retrievals: Schema.Int,
  keys: Schema.Int,
  last_retrieved_at: Schema.NullOr(Schema.Date)
})
export type KnowledgeUsage = typeof KnowledgeUsage.Type

const Limit = (max: number) =>
  Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, max, { message: () => `limit must be between 1 and ${max}` }))

export const KnowledgeListParams = Schema.Struct({
  scope: Schema.optional(KnowledgeScope),
  scope_ref: Schema.optional(ScopeRef),
  category: Schema.optional(KnowledgeCategory),
  status: Schema.optional(KnowledgeStatus),
  /** A search: results ranked by relevance (no cursor), each delivery logged as a retrieval. */
  q: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(500, { message: () => "q must be at most 500 characters" }), noNul("q"))),
  limit: Schema.optional(Limit(200)),
  cursor: Schema.optional(Schema.String.pipe(Schema.maxLength(512)))
})
export type KnowledgeListParams = typeof KnowledgeListParams.Type

export const RetrievalParams = Schema.Struct({
  since_days: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 90, { message: () => "since_days must be between 1 and 90" }))),
  entry_id: Schema.optional(ResourceId),
  limit: Schema.optional(Limit(1000))
})
export type RetrievalParams = typeof RetrievalParams.Type
