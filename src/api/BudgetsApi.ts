import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Budget, CreateBudget } from "../domain/Budget"
import { Conflict, InvalidRequest, NotFound } from "../domain/Errors"
import { RequiredScope } from "./Annotations"
import { Authentication } from "./Authentication"

const ById = Schema.Struct({ id: Schema.String.pipe(Schema.pattern(/^budget_[0-9a-f]{32}$/, { message: () => "not a budget id" })) })

/** Session budgets: caps on what a key or a named session may spend on queries. */
export class BudgetsApi extends HttpApiGroup.make("budgets")
  .add(
    HttpApiEndpoint.post("create", "/budget")
      .setPayload(CreateBudget)
      .addSuccess(Budget, { status: 201 })
      .addError(InvalidRequest)
      .addError(Conflict)
      .annotate(RequiredScope, "write")
  )
  .add(HttpApiEndpoint.get("list", "/budget").addSuccess(Schema.Struct({ items: Schema.Array(Budget) })).annotate(RequiredScope, "read"))
  .add(
    HttpApiEndpoint.get("get", "/budget/:id").setPath(ById).addSuccess(Budget).addError(InvalidRequest).addError(NotFound).annotate(RequiredScope, "read")
  )
  .add(
    HttpApiEndpoint.del("remove", "/budget/:id")
      .setPath(ById)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(RequiredScope, "write")
  )
  .middleware(Authentication)
  .prefix("/api") {}
