import type { Principal } from "./Principal"

/**
 * The one rule for what a model wrote (a run's answer and model text, a tool's result, an agent's
 * knowledge proposal, a conversation's earlier answers given to a run): it can quote rows, so a
 * caller without the query scope never sees it.
 */
export const mayReadRows = (principal: Principal) => principal.scopes.includes("query")

export const WITHHELD_FOR_ROWS = "the query scope is needed to see what the model and the tools said: it can quote rows"
