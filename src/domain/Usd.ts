/** Dollars as people read them: cents from a dollar up, two significant digits under it, and a floor for crumbs. */
export const formatUsd = (usd: number): string =>
  usd === 0 ? "$0" : usd < 0.0001 ? "under $0.0001" : usd < 1 ? `$${Number(usd.toPrecision(2))}` : `$${usd.toFixed(2)}`
