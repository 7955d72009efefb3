import type { CheckedStatement } from "../sqlguard/SqlGuard"
import { postgresShape } from "./PostgresShape"
import type { QueryShape } from "./QueryShape"
import { sqlparserShape } from "./SqlparserShape"
import { isNode } from "../sqlguard/Tree"

/** The shape of a checked query, from whichever grammar parsed it. */
export const queryShapeOf = (checked: CheckedStatement): QueryShape => {
  if (checked.tree.grammar === "none") return { kind: "opaque", why: checked.tree.why }
  const root = checked.tree.root
  if (checked.tree.grammar === "postgres") {
    return isNode(root) && isNode(root.SelectStmt) ? postgresShape(root.SelectStmt) : { kind: "opaque", why: "not a SELECT" }
  }
  return isNode(root) && isNode(root.Query) ? sqlparserShape(root.Query) : { kind: "opaque", why: "not a query" }
}
