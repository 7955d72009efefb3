import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Budget, CreateBudget } from "../domain/Budget"
import { Conflict, InvalidRequest, NotFound } from "../domain/Errors"
import { docs, RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: Schema.String.pipe(Schema.pattern(/^budget_[0-9a-f]{32}$/, { message: () => "not a budget id" })) })

export class BudgetsApi extends HttpApiGroup.make("budgets")
  .add(
    HttpApiEndpoint.post("create", "/budget")
      .setPayload(CreateBudget)
      .addSuccess(Budget, { status: 201 })
      .addError(InvalidRequest)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
      .annotateContext(
        docs(
          "Create a budget",
          "Caps what an API key or a named session may spend on queries: queries, rows, bytes scanned, cost and time, until an optional expiry. Queries that would overspend are refused with 429; a second budget for the same session is a 409."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/budget")
      .addSuccess(Schema.Struct({ items: Schema.Array(Budget) }))
      .annotate(RequiredScope, "read")
      .annotateContext(docs("List budgets", "The organization's budgets, oldest first, each with its limits, what has been used and what remains."))
  )
  .add(
    HttpApiEndpoint.get("get", "/budget/:id")
      .setPath(ById)
      .addSuccess(Budget)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "read")
      .annotateContext(docs("Get a budget", "One budget with its limits, usage and what remains. 404 when the organization has no budget with that id."))
  )
  .add(
    HttpApiEndpoint.del("remove", "/budget/:id")
      .setPath(ById)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "write")
      .annotateContext(docs("Delete a budget", "Removes the budget; queries it capped run without it from then on. 404 when the organization has no budget with that id."))
  )
  .middleware(Authentication)
  .prefix("/api")
  .annotate(OpenApi.Description, "Session budgets: caps on what a key or a named session may spend on queries.") {}
