import { Duration, Effect, Equal, Hash, RcMap, Runtime, type Scope } from "effect"
import type { ConnectionInput, DbType } from "../../src/domain/Connection"
import { AppConfig } from "../AppConfig"
import { ConnectorError, type ConnectorPool, type EgressPolicy, type Endpoint } from "./Connector"
import { CONNECTORS } from "./Connectors"
import { makeScrubber } from "./DriverErrors"
import { allowAnyTarget, gatewayEgress, pinnedLookup } from "./EgressPolicy"
import { openTunnel } from "./SshTunnel"
import { openPostgresSession, PostgresConnector, type SessionLogin } from "./Postgres"

const IDLE_TTL = Duration.minutes(5)

/** host:port of a store or Redis URL, which tenants' connections must never reach. */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000

/** What to open: one stored connection at one version, with its secrets. */
export interface PoolTarget {
  readonly orgId: string
  readonly connectionId: string
  readonly version: number
  readonly connection: ConnectionInput
  readonly secrets: ReadonlyArray<string>
  /** The SSH host key pinned for a stored connection, and how to pin the first one seen. */
  readonly hostKey?: {
    readonly pinned: string | null
    readonly pin: (fingerprint: string) => Effect.Effect<void, ConnectorError>
  }
}

// Pools are told apart by org, connection and version; the connection's fields ride along for the lookup.
class PoolKey implements Equal.Equal {
  readonly id: string
  constructor(readonly target: PoolTarget) {
    this.id = `${target.orgId}\u0000${target.connectionId}\u0000${target.version}`
  }
  [Equal.symbol](that: Equal.Equal): boolean {
    return that instanceof PoolKey && that.id === this.id
  }
  [Hash.symbol](): number {
    return Hash.string(this.id)
  }
}

export interface PoolInfo {
  readonly org_id: string
  readonly connection_id: string
  readonly name: string
  readonly db_type: DbType
  readonly version: number
  readonly opened_at: Date
  last_used_at: Date
  readonly pool: ConnectorPool
}

/** Where a target's database runs (behind its SSH server, when tunnelled), to bound the work sent to one server; null for a local file. */
export const serverOf = (target: PoolTarget): string | null => {
  const c = target.connection
  const address = CONNECTORS[c.db_type]?.address(c as never) ?? null
  if (address === null) return null
  const tunnel = "ssh_tunnel" in c ? c.ssh_tunnel : undefined
  const server = `${address.host}:${address.port}`
  return tunnel === undefined ? server : `${tunnel.host}:${tunnel.port ?? 22}>${server}`
}

/** Open a connector (and its SSH tunnel, when it has one) for a target; fails with the step that failed. */
export const openTarget = (target: PoolTarget, egress: EgressPolicy = allowAnyTarget): Effect.Effect<ConnectorPool, ConnectorError, Scope.Scope> =>
  Effect.gen(function* () {
    const c = target.connection
    const connector = CONNECTORS[c.db_type]
    if (connector === undefined) {
      return yield* new ConnectorError({ step: "config", message: `The ${c.db_type} connector is not available in this build` })
    }
    const connectTimeoutMs = c.connection_timeout === undefined ? DEFAULT_CONNECT_TIMEOUT_MS : c.connection_timeout * 1000
    const address = connector.address(c)
    const tunnel = "ssh_tunnel" in c ? c.ssh_tunnel : undefined
    // The first hop is the only address this process dials: the SSH server when there is a tunnel.
    const sshServer = tunnel === undefined ? null : { host: tunnel.host, port: tunnel.port ?? 22 }
    const firstHop = sshServer ?? address
    if (firstHop !== null) yield* egress.check(firstHop)
    // Drivers resolve through the policy at every connect, so a name cannot swap in another address after this check.
    const open = (endpoint: Endpoint | null, policy: EgressPolicy) =>
      connector.open({
        connection: c,
        endpoint,
        connectTimeoutMs,
        scrub: makeScrubber(target.secrets),
        egress: policy,
        ...(endpoint === null ? {} : { lookup: pinnedLookup(policy, endpoint) })
      })
    if (tunnel === undefined || sshServer === null || address === null) return yield* open(address, egress)
    const pinned = tunnel.host_key_fingerprint ?? target.hostKey?.pinned ?? null
    const opened = yield* openTunnel({ tunnel, target: address, pinned, connectTimeoutMs, lookup: pinnedLookup(egress, sshServer) })
    if (pinned === null) yield* target.hostKey?.pin(opened.fingerprint) ?? Effect.void
    const pool = yield* open(opened.endpoint, allowAnyTarget)
    const explain = (error: ConnectorError) => opened.failure() ?? error
    // Without queryNow: a tunnelled statement's failure is explained by the tunnel's, which only the effect does.
    const { queryNow: _plain, ...rest } = pool
    return {
      ...rest,
      query: (sql, options) => Effect.mapError(pool.query(sql, options), explain),
      ping: Effect.mapError(pool.ping, explain)
    } satisfies ConnectorPool
  })

/**
 * Connection pools as scoped resources in a keyed map: opened on first use, closed after five idle
 * minutes, when their connection is edited or deleted, and when the gateway stops.
 */
export class ConnectorPools extends Effect.Service<ConnectorPools>()("sluice/ConnectorPools", {
  scoped: Effect.gen(function* () {
    const config = yield* AppConfig
    const egress = yield* gatewayEgress(config)
    const open = new Map<string, PoolInfo>()
    const pools: RcMap.RcMap<PoolKey, ConnectorPool, ConnectorError> = yield* RcMap.make({
      // RcMap would hand a failed open to every request for its idle time; forgotten, the next request opens again.
      lookup: (key: PoolKey) =>
        Effect.gen(function* () {
          const pool = yield* openTarget(key.target, egress)
          const now = new Date()
          open.set(key.id, {
            org_id: key.target.orgId,
            connection_id: key.target.connectionId,
            name: key.target.connection.name,
            db_type: key.target.connection.db_type,
            version: key.target.version,
            opened_at: now,
            last_used_at: now,
            pool
          })
          yield* Effect.addFinalizer(() => Effect.sync(() => open.delete(key.id)))
          return pool
        }).pipe(Effect.tapErrorCause(() => RcMap.invalidate(pools, key))),
      idleTimeToLive: IDLE_TTL
    })

    /** The target's pool, opened if needed (a failed open is not cached) and held until the caller's scope closes. */
    const poolIn = (target: PoolTarget) => {
      const key = new PoolKey(target)
      return RcMap.get(pools, key).pipe(
        Effect.tap(() =>
          Effect.sync(() => {
            const info = open.get(key.id)
            if (info !== undefined) info.last_used_at = new Date()
          })
        )
      )
    }

    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    /**
     * The target's pool where it is open already, without an effect: its idle time is renewed (at
     * most once a second) as `poolIn` renews it, so a pool used only this way is not closed under its callers.
     */
    const openNow = (target: PoolTarget): ConnectorPool | undefined => {
      const key = new PoolKey(target)
      const info = open.get(key.id)
      if (info === undefined) return undefined
      const now = Date.now()
      if (now - info.last_used_at.getTime() > 1_000) {
        info.last_used_at = new Date(now)
        runFork(RcMap.touch(pools, key))
      }
      return info.pool
    }

    /** Whether the target's pool is open already (opening one may wait on the network). */
    const isOpen = (target: PoolTarget) => open.has(new PoolKey(target).id)

    /** Runs `use` with the target's pool. */
    const withPool = <A, E>(target: PoolTarget, use: (pool: ConnectorPool) => Effect.Effect<A, E>) =>
      Effect.scoped(Effect.flatMap(poolIn(target), use))

    /** Closes every pool of a connection (all versions), after an edit or a delete. */
    const retire = (orgId: string, connectionId: string) =>
      RcMap.keys(pools).pipe(
        Effect.flatMap((keys) =>
          Effect.forEach(
            keys.filter((k) => k.target.orgId === orgId && k.target.connectionId === connectionId),
            (k) => RcMap.invalidate(pools, k),
            { discard: true }
          )
        )
      )

    /** Closes every pool (of any connection) on one PostgreSQL database, so a copy of it can start: CREATE DATABASE … TEMPLATE waits for no session. */
    const retireDatabase = (host: string, port: number, database: string) =>
      RcMap.keys(pools).pipe(
        Effect.flatMap((keys) =>
          Effect.forEach(
            keys.filter((k) => {
              const c = k.target.connection
              return c.db_type === "postgresql" && c.host === host && (c.port ?? 5432) === port && c.database === database
            }),
            (k) => RcMap.invalidate(pools, k),
            { discard: true }
          )
        )
      )

    const stats = (orgId: string) =>
      [...open.values()]
        .filter((info) => info.org_id === orgId)
        .map(({ pool, ...info }) => ({ ...info, ...pool.stats() }))

    /** Opens a pool outside the map (test-credentials, diagnose), under the same egress policy. */
    const openOnce = (target: PoolTarget) => openTarget(target, egress)

    /**
     * Runs `use` for a check (the health loop's ping): with the target's pool when one is open for
     * requests, without keeping it open any longer; else, where a pool keeps a session per connection
     * on the server, with a pool of its own closed right after (checks must not hold a backend per
     * defined connection); else with the shared pool.
     */
    const withCheckPool = <A>(target: PoolTarget, use: (pool: ConnectorPool) => Effect.Effect<A, ConnectorError>) =>
      Effect.suspend(() => {
        const id = new PoolKey(target).id
        const opened = open.get(id)
        const ownPool = Effect.scoped(Effect.flatMap(openOnce(target), use))
        if (opened !== undefined) {
          // A pool that idled out under the check says nothing about the database.
          return Effect.catchAll(use(opened.pool), (error) => (open.get(id) === opened ? Effect.fail(error) : ownPool))
        }
        return CONNECTORS[target.connection.db_type]?.holdsServerSessions === true ? ownPool : withPool(target, use)
      })

    /**
     * A session of its own on a PostgreSQL connection's server, as `login` (not pooled, not read-only):
     * for branch administration and the dbt proxy's upstream, under the same egress policy. Not through an SSH tunnel.
     */
    const postgresSession = (target: PoolTarget, login: SessionLogin) =>
      Effect.gen(function* () {
        const c = target.connection
        if (c.db_type !== "postgresql") return yield* new ConnectorError({ step: "config", message: `${c.db_type} connections have no database branches; PostgreSQL ones do` })
        if (c.ssh_tunnel !== undefined) return yield* new ConnectorError({ step: "config", message: "Database branches are not made through an SSH tunnel" })
        const endpoint = PostgresConnector.address(c)!
        yield* egress.check(endpoint)
        const connectTimeoutMs = c.connection_timeout === undefined ? DEFAULT_CONNECT_TIMEOUT_MS : c.connection_timeout * 1000
        return yield* openPostgresSession({ connection: c, endpoint, connectTimeoutMs, scrub: makeScrubber(target.secrets), egress, lookup: pinnedLookup(egress, endpoint) }, login)
      })

    return { poolIn, openNow, isOpen, withPool, openOnce, withCheckPool, retire, retireDatabase, stats, postgresSession } as const
  })
}) {}
