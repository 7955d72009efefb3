/** Helpers for reading the parsers' JSON trees, which are untyped objects and arrays. */
export type Node = Record<string, unknown>

export const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null && !Array.isArray(value)

export const list = (value: unknown): Array<unknown> => (Array.isArray(value) ? value : [])

/** A sqlparser-rs Query: a body, and the lists every Query serializes. */
export const isQuery = (value: unknown): value is Node => isNode(value) && isNode(value.body) && ("pipe_operators" in value || "locks" in value)

/** Whether any object in the tree has a field named `key` (a table reference, say, at any depth). */
export const mentions = (tree: unknown, key: string): boolean =>
  Array.isArray(tree) ? tree.some((item) => mentions(item, key)) : isNode(tree) && (key in tree || Object.values(tree).some((value) => mentions(value, key)))
