/**
 * The shape of a query that column lineage needs, the same for both grammars: what each output
 * column is computed from, and where each name in FROM comes from. Front-ends translate the
 * parse trees into it; anything they cannot translate becomes `opaque`.
 */

/** A column as written: `email`, `c.email`, `public.customers.email`. */
export interface ColumnName {
  readonly qualifier: ReadonlyArray<string>
  readonly name: string
}

export type SelectItem =
  /** A plain column reference (a cast of one counts): its value passes through unchanged. */
  | { readonly kind: "column"; readonly column: ColumnName; readonly alias: string | undefined }
  /** `*` or `t.*`. */
  | { readonly kind: "star"; readonly qualifier: string | undefined }
  /** Anything computed: the columns it reads, and queries nested in it. `count(...)` reveals no value. */
  | {
      readonly kind: "expression"
      readonly columns: ReadonlyArray<ColumnName>
      readonly subqueries: ReadonlyArray<QueryShape>
      readonly countOnly: boolean
      readonly alias: string | undefined
    }

export type FromItem =
  | {
      readonly kind: "table"
      readonly parts: ReadonlyArray<string>
      readonly alias: string | undefined
      /** `customers AS c (a, b, n)`: the table's columns renamed by position, which lineage cannot map without the schema. */
      readonly columns: ReadonlyArray<string>
    }
  | {
      readonly kind: "query"
      readonly query: QueryShape
      readonly alias: string | undefined
      /** `(…) AS t (a, b)`: the derived columns renamed by position. */
      readonly columns: ReadonlyArray<string>
    }
  /** A table function, UNNEST…: what it yields is computed from the columns and queries in its arguments (LATERAL ones reach earlier tables). */
  | { readonly kind: "other"; readonly alias: string | undefined; readonly columns: ReadonlyArray<ColumnName>; readonly reads: ReadonlyArray<QueryShape> }

export interface Cte {
  readonly name: string
  /** `WITH c (a, b) AS (…)`: the CTE's columns renamed by position. */
  readonly columns: ReadonlyArray<string>
  readonly query: QueryShape
}

export type QueryShape =
  | { readonly kind: "select"; readonly ctes: ReadonlyArray<Cte>; readonly items: ReadonlyArray<SelectItem>; readonly from: ReadonlyArray<FromItem> }
  | { readonly kind: "set"; readonly ctes: ReadonlyArray<Cte>; readonly arms: ReadonlyArray<QueryShape> }
  /** VALUES: each row's expressions, by position (a LATERAL VALUES can carry an earlier table's columns). */
  | { readonly kind: "values"; readonly rows: ReadonlyArray<ReadonlyArray<SelectItem>> }
  /** A construct a front-end does not translate; masking then treats the whole result conservatively. */
  | { readonly kind: "opaque"; readonly why: string }
