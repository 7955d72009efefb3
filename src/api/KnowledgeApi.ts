import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Conflict, InvalidRequest, NotFound, PayloadTooLarge } from "../domain/Errors"
import {
  CreateKnowledge,
  KnowledgeEdit,
  KnowledgeEntry,
  KnowledgeListItem,
  KnowledgeListParams,
  KnowledgeRetrieval,
  KnowledgeUsage,
  RetrievalParams,
  UpdateKnowledge
} from "../domain/Knowledge"
import { Page } from "../domain/Pagination"
import { ResourceId } from "../domain/Text"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: ResourceId })
const UsageParams = RetrievalParams.pick("since_days")

export class KnowledgeApi extends HttpApiGroup.make("knowledge")
  .add(
    HttpApiEndpoint.get("list", "/knowledge")
      .setUrlParams(KnowledgeListParams)
      .addSuccess(Page(KnowledgeListItem))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs(
          "List or search knowledge",
          "The organization's entries (archived ones only with `status=archived`), most recently updated first, each with a snippet of its body; filters `scope`, `scope_ref`, `category`, `status`. With `q`, a search instead: the active entries (or those of `status`) that best answer it, ranked by full-text, BM25 with typo tolerance and exact keywords fused, each with its `score`, one page of at most `limit`, each delivery logged as a retrieval."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("retrievals", "/knowledge/retrievals")
      .setUrlParams(RetrievalParams)
      .addSuccess(Schema.Struct({ items: Schema.Array(KnowledgeRetrieval) }))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs("List retrievals", "Entries delivered for a search or a task over the last `since_days` (default 30, at most 90): which, for what query, at which rank and score, to whom; newest first.")
      )
  )
  .add(
    HttpApiEndpoint.get("usage", "/knowledge/usage")
      .setUrlParams(UsageParams)
      .addSuccess(Schema.Struct({ items: Schema.Array(KnowledgeUsage) }))
      .addError(InvalidRequest)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Knowledge usage", "Per entry that is not archived: retrievals and how many keys had it over the last `since_days` (default 30), when it was last delivered, and how often it was read."))
  )
  .add(
    HttpApiEndpoint.get("get", "/knowledge/:id")
      .setPath(ById)
      .addSuccess(KnowledgeEntry)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Read an entry", "One entry, whatever its status (a pending one is an agent's proposal, not yet fact); counted as viewed."))
  )
  .add(
    HttpApiEndpoint.post("create", "/knowledge")
      .setPayload(CreateKnowledge)
      .addSuccess(KnowledgeEntry, { status: 201 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(PayloadTooLarge)
      .annotate(RequiredScope, "admin")
      .annotateContext(
        docs(
          "Write an entry",
          "A new entry, active at once. `scope` org (no `scope_ref`) takes context, decisions, rules; project (`scope_ref` its name) takes all four; connection (`scope_ref` a connection of the organization) takes context and troubleshooting. `title` is a lowercase slug, unique within its scope, `scope_ref` and category (409). The body is markdown of at most 256 KiB (413)."
        )
      )
  )
  .add(
    HttpApiEndpoint.put("update", "/knowledge/:id")
      .setPath(ById)
      .setPayload(UpdateKnowledge)
      .addSuccess(KnowledgeEntry)
      .addError(InvalidRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(PayloadTooLarge)
      .annotate(RequiredScope, "admin")
      .annotateContext(
        docs("Rewrite an entry", "Replaces what the entry says, keeping the version it replaces in its history. The entry is active afterwards: a person's rewrite approves a pending entry and restores an archived one.")
      )
  )
  .add(
    HttpApiEndpoint.del("archive", "/knowledge/:id")
      .setPath(ById)
      .addSuccess(KnowledgeEntry)
      .addError(NotFound)
      .annotate(RequiredScope, "admin")
      .annotateContext(docs("Archive an entry", "Archives the entry: no longer listed, searched or served, nothing lost (its history stays; a rewrite restores it). Archiving an archived entry changes nothing."))
  )
  .add(
    HttpApiEndpoint.post("approve", "/knowledge/:id/approve")
      .setPath(ById)
      .addSuccess(KnowledgeEntry)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(RequiredScope, "admin")
      .annotateContext(docs("Approve a proposal", "A pending entry (an agent's proposal) becomes active: served as the organization's knowledge. 409 for an entry that is not pending."))
  )
  .add(
    HttpApiEndpoint.get("edits", "/knowledge/:id/edits")
      .setPath(ById)
      .addSuccess(Schema.Struct({ items: Schema.Array(KnowledgeEdit) }))
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(
        docs("An entry's history", "Every earlier version kept (SP_KNOWLEDGE_HISTORY_VERSIONS, default 25), newest first: what it said, its status, who wrote it and when, who replaced it and when.")
      )
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(
    OpenApi.Description,
    "What the organization knows about its data: entries people write and agents propose (pending an admin's approval), their history, search, and which were delivered to whom."
  ) {}
