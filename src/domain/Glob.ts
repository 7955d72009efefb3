/** A glob as a whole-string, case-insensitive regex: `*` matches any run of characters, everything else itself. */
export const globRegex = (pattern: string) =>
  new RegExp(`^${pattern.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`, "i")
