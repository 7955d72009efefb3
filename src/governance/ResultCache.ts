import { Effect } from "effect"
import type { Column } from "../../layers/connectors/Connector"
import { ResultMemory } from "../../layers/ResultMemory"
import type { PiiAction } from "../domain/Pii"

/** What a cached query returns again: the rows as the executor left them, before any per-call field. */
export interface CachedResult {
  readonly columns: ReadonlyArray<Column>
  readonly rows: ReadonlyArray<ReadonlyArray<unknown>>
  readonly truncated: boolean
  readonly bytesScanned?: number
  /** Stored already masked: a cached answer is never more revealing than the rules it was made under. */
  readonly masked: ReadonlyArray<{ readonly column: string; readonly rule: PiiAction }>
}

export interface ResultCacheKey {
  readonly orgId: string
  readonly connectionId: string
  /** Bumped by every edit of the connection, its table policy included, so old entries are never served. */
  readonly connectionVersion: number
  readonly rowLimit: number
  /** The PII rules' version: results masked under other rules are other entries. */
  readonly piiVersion: number
  /** The statement as it runs: checked, row-capped, executable comments opened. */
  readonly sql: string
}

interface Entry {
  readonly orgId: string
  readonly connectionId: string
  readonly value: CachedResult
  readonly bytes: number
  readonly expiresAt: number
  /** Its share of the result memory. */
  readonly kept: { readonly release: () => void }
}

/** A cache hit: the result and its size as JSON. */
export interface CacheHit {
  readonly value: CachedResult
  readonly bytes: number
}

interface OrgCounters {
  hits: number
  misses: number
  evictions: number
}

// Per replica, and at most a quarter of the result memory; the least recently used entries go first once results fill it.
const MAX_BYTES = 64 * 1024 * 1024

const keyOf = (k: ResultCacheKey) => [k.orgId, k.connectionId, k.connectionVersion, k.piiVersion, k.rowLimit, k.sql].join("\u0000")

/**
 * Query results kept in memory for a connection's `result_cache_ttl`. Keyed by org, connection and
 * its version, PII rules version, row cap and the exact statement that runs, so no entry crosses an
 * org, a policy or a cap. Nothing is written to disk. Entries hold their bytes in the result
 * memory the results in flight share, so a full cache leaves them three quarters of it.
 */
export class ResultCache extends Effect.Service<ResultCache>()("sluice/ResultCache", {
  effect: Effect.gen(function* () {
    const memory = yield* ResultMemory
    const maxBytes = Math.min(MAX_BYTES, Math.floor(memory.limit / 4))
    const entries = new Map<string, Entry>()
    const counters = new Map<string, OrgCounters>()
    let totalBytes = 0

    const countersOf = (orgId: string) => {
      let c = counters.get(orgId)
      if (c === undefined) counters.set(orgId, (c = { hits: 0, misses: 0, evictions: 0 }))
      return c
    }
    const drop = (key: string, entry: Entry) => {
      entries.delete(key)
      totalBytes -= entry.bytes
      entry.kept.release()
    }

    const get = (key: ResultCacheKey): CacheHit | undefined => {
      const k = keyOf(key)
      const entry = entries.get(k)
      if (entry !== undefined && entry.expiresAt <= Date.now()) drop(k, entry)
      const live = entry !== undefined && entry.expiresAt > Date.now() ? entry : undefined
      const c = countersOf(key.orgId)
      if (live === undefined) {
        c.misses++
        return undefined
      }
      c.hits++
      // Map order is recency order: move the entry to the end.
      entries.delete(k)
      entries.set(k, live)
      return live
    }

    const set = (key: ResultCacheKey, value: CachedResult, bytes: number, ttlMs: number) => {
      if (bytes > maxBytes / 8) return
      const k = keyOf(key)
      const previous = entries.get(k)
      if (previous !== undefined) drop(k, previous)
      // When results in flight fill the memory, this one is not kept.
      const kept = memory.keep(bytes)
      if (kept === undefined) return
      entries.set(k, { orgId: key.orgId, connectionId: key.connectionId, value, bytes, expiresAt: Date.now() + ttlMs, kept })
      totalBytes += bytes
      for (const [oldest, entry] of entries) {
        if (totalBytes <= maxBytes) break
        drop(oldest, entry)
        countersOf(entry.orgId).evictions++
      }
    }

    /** Drops an org's entries, or one connection's; returns how many went. */
    const invalidate = (orgId: string, connectionId?: string) =>
      Effect.sync(() => {
        let removed = 0
        for (const [k, entry] of entries) {
          if (entry.orgId === orgId && (connectionId === undefined || entry.connectionId === connectionId)) {
            drop(k, entry)
            removed++
          }
        }
        return removed
      })

    const stats = (orgId: string) =>
      Effect.sync(() => {
        const now = Date.now()
        let count = 0
        let bytes = 0
        for (const entry of entries.values()) {
          if (entry.orgId !== orgId || entry.expiresAt <= now) continue
          count++
          bytes += entry.bytes
        }
        const c = countersOf(orgId)
        const lookups = c.hits + c.misses
        return {
          entries: count,
          bytes,
          hits: c.hits,
          misses: c.misses,
          evictions: c.evictions,
          hit_rate: lookups === 0 ? 0 : Number((c.hits / lookups).toFixed(4)),
          max_bytes_per_replica: maxBytes
        }
      })

    return { get, set, invalidate, stats } as const
  }),
  dependencies: [ResultMemory.Default]
}) {}
