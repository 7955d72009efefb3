import { lookup } from "node:dns/promises"
import { BlockList, isIP } from "node:net"
import { Effect } from "effect"
import { ConnectorError, type Endpoint } from "./Connector"

/** Decides whether the gateway may dial an address on a customer connection's behalf. */
export interface EgressPolicy {
  readonly check: (endpoint: Endpoint) => Effect.Effect<void, ConnectorError>
}

export const allowAnyTarget: EgressPolicy = { check: () => Effect.void }

// The gateway's own host and the cloud metadata services: a tenant's connection must not reach them.
const INTERNAL = new BlockList()
INTERNAL.addSubnet("127.0.0.0", 8, "ipv4")
INTERNAL.addSubnet("0.0.0.0", 8, "ipv4")
INTERNAL.addSubnet("169.254.0.0", 16, "ipv4")
INTERNAL.addAddress("::1", "ipv6")
INTERNAL.addAddress("::", "ipv6")
INTERNAL.addSubnet("fe80::", 10, "ipv6")
INTERNAL.addAddress("fd00:ec2::254", "ipv6")

/** An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is checked as the IPv4 address it is. */
const normalize = (address: string): [string, "ipv4" | "ipv6"] => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return [mapped[1]!, "ipv4"]
  return [address, isIP(address) === 6 ? "ipv6" : "ipv4"]
}

const refused = (host: string, why: string) =>
  new ConnectorError({ step: "config", message: `This gateway does not connect to ${host}: ${why}` })

/**
 * Cloud egress: no loopback, link-local or metadata addresses (unless `allowLoopback`, for a gateway
 * whose databases share its host), and never the gateway's own store or Redis. Every address a
 * name resolves to is checked, so a name pointing inward is refused like the address itself.
 */
export const guardedEgress = (options: {
  readonly allowLoopback: boolean
  readonly reserved: ReadonlyArray<Endpoint>
}): Effect.Effect<EgressPolicy> =>
  Effect.gen(function* () {
    const resolve = (host: string) => Effect.promise(() => lookup(host, { all: true }).catch(() => []))
    const reservedAddresses = yield* Effect.cached(
      Effect.forEach(options.reserved, (endpoint) =>
        Effect.map(resolve(endpoint.host), (found) => found.map((a) => `${normalize(a.address)[0]}:${endpoint.port}`))
      ).pipe(Effect.map((lists) => new Set(lists.flat())))
    )
    const check = (endpoint: Endpoint) =>
      Effect.gen(function* () {
        const found = yield* resolve(endpoint.host)
        const reserved = yield* reservedAddresses
        for (const { address } of found) {
          const [ip, family] = normalize(address)
          if (reserved.has(`${ip}:${endpoint.port}`)) return yield* refused(endpoint.host, "it is the gateway's own store")
          if (!options.allowLoopback && INTERNAL.check(ip, family)) {
            return yield* refused(endpoint.host, "loopback, link-local and cloud metadata addresses are off limits in cloud deployments")
          }
        }
      })
    return { check }
  })
