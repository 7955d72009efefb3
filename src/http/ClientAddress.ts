export interface ClientAddress {
  /** The client's address: the socket peer, or the X-Forwarded-For origin when the peer is a trusted proxy. */
  readonly ip: string | null
  /** True only for a loopback peer that is not relaying somebody else's request. */
  readonly local: boolean
}

const unmap = (ip: string) => (ip.startsWith("::ffff:") ? ip.slice(7) : ip)

export const isLoopback = (ip: string) => {
  const address = unmap(ip)
  return address === "::1" || address.startsWith("127.")
}

/** X-Forwarded-For is honoured only from SP_TRUSTED_PROXIES, read right to left past trusted hops. */
export const resolveClientAddress = (
  peer: string | null,
  headers: Readonly<Record<string, string | undefined>>,
  trustedProxies: ReadonlySet<string>
): ClientAddress => {
  const socketIp = peer === null ? null : unmap(peer)
  const forwardedFor = headers["x-forwarded-for"]
  const proxied = forwardedFor !== undefined || headers["forwarded"] !== undefined
  if (socketIp === null) return { ip: null, local: false }
  if (!trustedProxies.has(socketIp) || forwardedFor === undefined) {
    return { ip: socketIp, local: isLoopback(socketIp) && !proxied }
  }
  const hops = forwardedFor.split(",").map((hop) => unmap(hop.trim())).filter((hop) => hop.length > 0)
  let client = socketIp
  for (let i = hops.length - 1; i >= 0; i--) {
    client = hops[i]!
    if (!trustedProxies.has(client)) break
  }
  return { ip: client, local: isLoopback(client) }
}
