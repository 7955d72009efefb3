/** Who runs a statement, written into it as a SQLCommenter-style comment for the database's own logs. */
export interface Attribution {
  readonly keyPrefix: string | null
  readonly orgId: string
  readonly requestId: string
}

// Only characters that cannot close the comment or inject anything after it.
const safe = (value: string) => value.replace(/[^A-Za-z0-9_.:-]/g, "_").slice(0, 64)

export const attributionComment = (a: Attribution) =>
  `/* sluice key=${safe(a.keyPrefix ?? "local")} org=${safe(a.orgId)} request=${safe(a.requestId)} */`
