import { Either } from "effect"
import type { DbType } from "../domain/Connection"
import type { SqlGuard } from "./sqlguard/SqlGuard"

/**
 * The relations statements read, as the SQL guard's own parsers see them (CTEs are not relations;
 * subqueries, quoted and qualified names are read as the dialect reads them), each as its name's
 * parts; and how many statements did not parse (they count for nothing).
 */
export const relationsRead = (guard: SqlGuard, statements: Iterable<string>, dbType: DbType) => {
  const relations: Array<ReadonlyArray<string>> = []
  let unparsed = 0
  for (const sql of statements) {
    const checked = guard.check(sql, dbType, "any")
    if (Either.isLeft(checked)) unparsed += 1
    else for (const table of checked.right.analysis.tables) relations.push(table.parts)
  }
  return { relations, unparsed }
}
