import type { LookupAddress } from "node:dns"
import { lookup } from "node:dns/promises"
import type { Agent } from "node:http"
import { BlockList, isIP, type LookupFunction, Socket } from "node:net"
import { networkInterfaces } from "node:os"
import { Deferred, Effect, type Exit, Option, Redacted } from "effect"
import { ConnectorError, type EgressPolicy, type Endpoint } from "./Connector"

/** A host as an address parser reads it: no IPv6 brackets, no zone id (fe80::1%eth0 is fe80::1). */
const bare = (host: string) => host.replace(/^\[(.*)\]$/, "$1")
const withoutZone = (address: string) => address.replace(/%.*$/, "")
const familyOf = (address: string): "ipv4" | "ipv6" => (isIP(address) === 6 ? "ipv6" : "ipv4")

// The resolver parses every spelling of an address (2130706433, 0x7f.1, 0177.0.0.1, ::ffff:7f00:1) into its canonical form.
const resolve = (host: string) =>
  Effect.promise(() => lookup(bare(host), { all: true }).catch((): Array<LookupAddress> => []))

export const allowAnyTarget: EgressPolicy = { check: (endpoint) => resolve(endpoint.host) }

const addLoopback = (list: BlockList) => {
  list.addSubnet("127.0.0.0", 8, "ipv4")
  list.addSubnet("0.0.0.0", 8, "ipv4")
  list.addAddress("::1", "ipv6")
  list.addAddress("::", "ipv6")
}

// The gateway's own host and the cloud metadata services: a tenant's connection must not reach them.
// BlockList compares parsed addresses, and matches IPv4-mapped IPv6 (::ffff:127.0.0.1) against the IPv4 rules.
const INTERNAL = new BlockList()
addLoopback(INTERNAL)
INTERNAL.addSubnet("169.254.0.0", 16, "ipv4")
INTERNAL.addSubnet("fe80::", 10, "ipv6")
INTERNAL.addAddress("fd00:ec2::254", "ipv6")
INTERNAL.addAddress("100.100.100.200", "ipv4")
// IPv6 forms that carry an IPv4 address (IPv4-compatible, NAT64, 6to4): each could be an internal one.
INTERNAL.addSubnet("::", 96, "ipv6")
INTERNAL.addSubnet("64:ff9b::", 96, "ipv6")
INTERNAL.addSubnet("2002::", 16, "ipv6")

const LOOPBACK = new BlockList()
addLoopback(LOOPBACK)

const ownAddresses = () =>
  Object.values(networkInterfaces())
    .flat()
    .flatMap((i) => (i === undefined ? [] : [withoutZone(i.address)]))

/** This machine's addresses as a list that also matches their IPv4-mapped IPv6 forms. */
const ownAddressList = () => {
  const list = new BlockList()
  for (const own of ownAddresses()) list.addAddress(own, familyOf(own))
  return list
}

const refused = (host: string, why: string) =>
  new ConnectorError({ step: "config", message: `This gateway does not connect to ${host}: ${why}` })

const refusalOf = (exit: Exit.Failure<unknown, ConnectorError>, host: string) =>
  exit.cause._tag === "Fail" ? exit.cause.error : refused(host, "the address check failed")

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
    // Per port, the addresses that reach a reserved service. One on this machine is reached through
    // every address the machine has (a server on 0.0.0.0 answers on all of them), so all are reserved.
    const reservedByPort = yield* Effect.cached(
      Effect.map(
        Effect.forEach(options.reserved, (endpoint) => Effect.map(resolve(endpoint.host), (found) => ({ endpoint, found }))),
        (resolved) => {
          const byPort = new Map<number, BlockList>()
          for (const { endpoint, found } of resolved) {
            const list = byPort.get(endpoint.port) ?? new BlockList()
            byPort.set(endpoint.port, list)
            const local = ownAddresses()
            for (const { address } of found) {
              const ip = withoutZone(address)
              list.addAddress(ip, familyOf(ip))
              if (LOOPBACK.check(ip, familyOf(ip)) || local.includes(ip)) {
                addLoopback(list)
                for (const own of local) list.addAddress(own, familyOf(own))
              }
            }
          }
          return byPort
        }
      )
    )
    const check = (endpoint: Endpoint) =>
      Effect.gen(function* () {
        // A driver reads a host that is a path as a unix socket on this machine (pg: the store's own socket directory).
        if (endpoint.host.includes("/")) return yield* refused(endpoint.host, "a socket path is not a network address")
        const found = yield* resolve(endpoint.host)
        const reserved = (yield* reservedByPort).get(endpoint.port)
        for (const { address } of found) {
          const ip = withoutZone(address)
          if (reserved?.check(ip, familyOf(ip))) return yield* refused(endpoint.host, "it is the gateway's own store")
          // The gateway host's own addresses reach what its loopback does (a server on 0.0.0.0 answers on all of them: attack 41 F2).
          if (!options.allowLoopback && (INTERNAL.check(ip, familyOf(ip)) || ownAddressList().check(ip, familyOf(ip)))) {
            return yield* refused(endpoint.host, "loopback, link-local and cloud metadata addresses, and the gateway host's own, are off limits in cloud deployments")
          }
        }
        return found
      })
    return { check }
  })

const endpointOf = (url: Redacted.Redacted<string>): Option.Option<Endpoint> =>
  Option.flatMap(Option.liftThrowable(() => new URL(Redacted.value(url)))(), (u) =>
    u.hostname === "" ? Option.none() : Option.some({ host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || (u.protocol.startsWith("redis") ? 6379 : 5432)) })
  )

/**
 * Where the gateway may go for what a tenant names (a connection's database, an eval set's git
 * remote): anywhere on a self-hosted gateway; in cloud, the guarded egress, never the gateway's
 * own store or Redis.
 */
export const gatewayEgress = (config: {
  readonly selfHosted: boolean
  readonly egressAllowLoopback: boolean
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly redisUrl: Option.Option<Redacted.Redacted<string>>
}): Effect.Effect<EgressPolicy> =>
  config.selfHosted
    ? Effect.succeed(allowAnyTarget)
    : guardedEgress({
        allowLoopback: config.egressAllowLoopback,
        reserved: [config.databaseUrl, config.redisUrl].flatMap((url) => Option.toArray(Option.flatMap(url, endpointOf)))
      })

/**
 * A DNS lookup for a connection's HTTP agent: it answers only the connection's own host, with the
 * addresses the policy has just checked, so every socket dials a checked address (a name that
 * resolves elsewhere by the time the socket opens is checked again) and no other host is reached.
 */
export const pinnedLookup = (policy: EgressPolicy, endpoint: Endpoint): LookupFunction => (hostname, options, callback) => {
  const answer = (error: NodeJS.ErrnoException | null, addresses: ReadonlyArray<LookupAddress>) =>
    options.all === true ? callback(error, [...addresses]) : callback(error, addresses[0]?.address ?? "", addresses[0]?.family ?? 4)
  if (bare(hostname).toLowerCase() !== bare(endpoint.host).toLowerCase()) {
    return answer(refused(hostname, "a connection only reaches its own host"), [])
  }
  Effect.runCallback(policy.check(endpoint), {
    onExit: (exit) => {
      if (exit._tag === "Failure") return answer(refusalOf(exit, hostname), [])
      const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : (options.family ?? 0)
      const addresses = exit.value.filter((a) => family === 0 || a.family === family)
      if (addresses.length === 0) return answer(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), [])
      answer(null, addresses)
    }
  })
}

/**
 * An HTTP(S) agent for a driver that reaches hosts besides the connection's own (Snowflake's result
 * chunks in cloud storage, BigQuery's token endpoint): every socket dials an address the policy has
 * just checked for that socket's host and port. A name resolves through the check; an address, which
 * no lookup sees, is checked as it is before the socket opens.
 */
export const checkedAgent = <A extends Agent>(policy: EgressPolicy, agent: A): A => {
  const connect = agent.createConnection.bind(agent)
  agent.createConnection = (options, callback) => {
    const endpoint = { host: bare(options.host ?? "localhost"), port: Number(options.port ?? options.defaultPort) }
    if (isIP(endpoint.host) === 0) return connect({ ...options, lookup: pinnedLookup(policy, endpoint) }, callback)
    Effect.runCallback(policy.check(endpoint), {
      onExit: (exit) => {
        if (exit._tag === "Failure") return callback?.(refusalOf(exit, endpoint.host), undefined as never)
        const socket = connect(options)
        if (socket) callback?.(null, socket)
      }
    })
    return undefined
  }
  return agent
}

/**
 * The policy's refusals told to what is under way: `guard` fails an effect with the refusal as soon as
 * a socket it needs is refused, instead of with the driver's own error after the driver's retries.
 */
export const watchRefusals = (policy: EgressPolicy) => {
  const watching = new Set<Deferred.Deferred<never, ConnectorError>>()
  const reporting: EgressPolicy = {
    check: (endpoint) =>
      Effect.tapError(policy.check(endpoint), (error) => Effect.forEach([...watching], (refused) => Deferred.fail(refused, error), { discard: true }))
  }
  const guard = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | ConnectorError, R> =>
    Effect.acquireUseRelease(
      Effect.tap(Deferred.make<never, ConnectorError>(), (refused) => Effect.sync(() => watching.add(refused))),
      // The wait is interruptible even where the effect is not (a pool's acquire), so a finished effect does not wait on it.
      (refused) => Effect.raceFirst(effect, Effect.interruptible(Deferred.await(refused))),
      (refused) => Effect.sync(() => watching.delete(refused))
    )
  return { policy: reporting, guard }
}

/**
 * A TCP socket for a driver that dials what it is told (pg, mysql2, tedious): its name resolves
 * through `lookup` when there is one, so the driver's own DNS lookup never picks the address.
 */
export const pinnedSocket = (lookup: LookupFunction | undefined): Socket => {
  const socket = new Socket()
  if (lookup === undefined) return socket
  const connect = socket.connect.bind(socket) as (...args: Array<unknown>) => Socket
  // pg calls connect(port, host), or connect(path) for a unix socket, which has no name to resolve.
  socket.connect = ((...args: Array<unknown>) =>
    typeof args[1] === "string" ? connect({ port: args[0], host: args[1], lookup }) : connect(...args)) as Socket["connect"]
  return socket
}

/** A socket already dialling the endpoint through `lookup`. */
export const dialPinned = (endpoint: Endpoint, lookup: LookupFunction | undefined): Socket =>
  pinnedSocket(lookup).connect(endpoint.port, endpoint.host)
