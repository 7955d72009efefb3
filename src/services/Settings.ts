import { Effect } from "effect"
import type { OrgId } from "../domain/Ids"
import { makeLookupCache } from "./LookupCache"
import type { Principal } from "../domain/Principal"
import type { OrgSettings, SettingsPatch } from "../domain/Settings"
import { SettingsRepo } from "../repos/SettingsRepo"

// Every query reads its org's defaults; other replicas see a change within this.
const SETTINGS_CACHE_TTL_MS = 1000

export class Settings extends Effect.Service<Settings>()("sluice/Settings", {
  scoped: Effect.gen(function* () {
    const repo = yield* SettingsRepo
    const defaults: OrgSettings = {
      default_row_limit: 10_000,
      mcp_default_row_limit: 1_000,
      query_timeout_seconds: 30,
      mcp_tools: "full"
    }

    const stored = yield* makeLookupCache({ ttlMs: SETTINGS_CACHE_TTL_MS, lookup: (orgId: string) => repo.get(orgId as OrgId) })

    const get = (principal: Principal) => Effect.map(stored.get(principal.orgId), (s): OrgSettings => ({ ...defaults, ...s }))

    /** `get` from what this replica holds in memory; undefined where only `get` can tell. */
    const getNow = (principal: Principal): OrgSettings | undefined => {
      const s = stored.peek(principal.orgId)
      return s === undefined ? undefined : { ...defaults, ...s }
    }

    /** Merges a validated patch over the org's stored settings. */
    const update = Effect.fn("Settings.update")(function* (principal: Principal, patch: SettingsPatch) {
      const merged = { ...(yield* stored.get(principal.orgId)), ...patch }
      yield* repo.put(principal.orgId, merged)
      yield* stored.invalidate(principal.orgId)
      return { ...defaults, ...merged } satisfies OrgSettings
    })

    return { get, getNow, update } as const
  }),
  dependencies: [SettingsRepo.Default]
}) {}
