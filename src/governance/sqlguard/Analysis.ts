/** What kind of read a statement is; only `query` gets a row cap rewrite. */
export type StatementKind = "query" | "explain" | "show" | "describe"

/** A table the statement reads, as written (1 to 3 name parts); CTE references are not tables. */
export interface TableReference {
  readonly parts: ReadonlyArray<string>
  /** Where a relation of a FROM clause is named in the statement's text, and whether an alias follows: a derived table can stand in its place. */
  readonly at?: NameSpan
}

export interface NameSpan {
  readonly start: number
  readonly end: number
  readonly aliased: boolean
  /** The last part of the name as written: the alias a derived table in its place takes when none is written. */
  readonly alias: string
}

/** The outer query's row limit, located in the SQL text so it can be rewritten. */
export type OuterLimit =
  | { readonly kind: "none" }
  | { readonly kind: "literal"; readonly value: number; readonly start: number; readonly end: number }
  /** A limit the cap cannot safely rewrite (an expression, WITH TIES, a pipe operator…); the driver still caps rows. */
  | { readonly kind: "fixed" }

export interface Analysis {
  readonly kind: StatementKind
  readonly tables: ReadonlyArray<TableReference>
  /** Schemas or databases whose relations the statement lists (`SHOW TABLES FROM db`), as written. */
  readonly databases: ReadonlyArray<string>
  readonly limit: OuterLimit
  /** SQL Server: where `TOP (n)` goes when the outer query is one SELECT (after SELECT [ALL|DISTINCT]). */
  readonly topAt: number | undefined
  /** SQL Server: the outer query has ORDER BY (so OFFSET … FETCH can be added). */
  readonly ordered: boolean
}

/**
 * Why a statement was refused: `reason` is shown to the caller, who wrote the statement;
 * `recorded` is written to the audit log, which keys that may not see data read, so it never
 * quotes the statement's text (the same as `reason` unless the reason does).
 */
export class Refusal {
  constructor(
    readonly reason: string,
    readonly recorded: string = reason
  ) {}
}

/** Collects the first refusal while a walk goes on to the end of the tree. */
export class Findings {
  reason: string | undefined
  refuse(reason: string) {
    this.reason ??= reason
  }
}
