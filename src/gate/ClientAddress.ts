export interface ClientAddress {
  /** The client's address: the socket peer, or the X-Forwarded-For origin when the peer is a trusted proxy. */
  readonly ip: string | null
  /** True only for a loopback peer that sends no proxy header at all, and no browser request made by another site's page. */
  readonly local: boolean
}

const unmap = (ip: string) => (ip.startsWith("::ffff:") ? ip.slice(7) : ip)

export const isLoopback = (ip: string) => {
  const address = unmap(ip)
  return address === "::1" || address.startsWith("127.")
}

/** Headers a proxy adds to say whose request it relays; any of them, even empty, means the peer is relaying. */
const relayed = (headers: Readonly<Record<string, string | undefined>>) =>
  Object.keys(headers).some((name) => /^(forwarded|x-forwarded-.+|x-real-ip|true-client-ip|cf-connecting-ip|x-client-ip|x-cluster-client-ip|fastly-client-ip)$/i.test(name))

/**
 * A browser's request that another site's page made (Sec-Fetch-Site cross-site or same-site, such
 * as a page on another localhost port): never the machine's own operator, whatever its address.
 */
const fromAnotherSite = (headers: Readonly<Record<string, string | undefined>>) => {
  const site = headers["sec-fetch-site"]
  return site !== undefined && site !== "same-origin" && site !== "none"
}

/** X-Forwarded-For is honoured only from SP_TRUSTED_PROXIES, read right to left past trusted hops. */
export const resolveClientAddress = (
  peer: string | null,
  headers: Readonly<Record<string, string | undefined>>,
  trustedProxies: ReadonlySet<string>
): ClientAddress => {
  const socketIp = peer === null ? null : unmap(peer)
  const forwardedFor = headers["x-forwarded-for"]
  if (socketIp === null) return { ip: null, local: false }
  if (!trustedProxies.has(socketIp) || forwardedFor === undefined) {
    return { ip: socketIp, local: isLoopback(socketIp) && !relayed(headers) && !fromAnotherSite(headers) }
  }
  const hops = forwardedFor.split(",").map((hop) => unmap(hop.trim())).filter((hop) => hop.length > 0)
  let client = socketIp
  for (let i = hops.length - 1; i >= 0; i--) {
    client = hops[i]!
    if (!trustedProxies.has(client)) break
  }
  // A relayed request is never local, whatever address the proxy names.
  return { ip: client, local: false }
}
