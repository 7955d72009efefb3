import { Cache, Duration, Effect, Exit } from "effect"
import type { Principal } from "../domain/Principal"
import type { OrgSettings, SettingsPatch } from "../domain/Settings"
import { SettingsRepo } from "../repos/SettingsRepo"

// Every query reads its org's defaults; other replicas see a change within this.
const SETTINGS_CACHE_TTL = Duration.seconds(1)

export class Settings extends Effect.Service<Settings>()("sluice/Settings", {
  effect: Effect.gen(function* () {
    const repo = yield* SettingsRepo
    const defaults: OrgSettings = {
      default_row_limit: 10_000,
      mcp_default_row_limit: 1_000,
      query_timeout_seconds: 30,
      mcp_tools: "full"
    }

    const stored = yield* Cache.makeWith({
      capacity: 10_000,
      lookup: repo.get,
      timeToLive: (exit) => (Exit.isSuccess(exit) ? SETTINGS_CACHE_TTL : Duration.zero)
    })

    const get = (principal: Principal) => Effect.map(stored.get(principal.orgId), (s): OrgSettings => ({ ...defaults, ...s }))

    /** Merges a validated patch over the org's stored settings. */
    const update = Effect.fn("Settings.update")(function* (principal: Principal, patch: SettingsPatch) {
      const merged = { ...(yield* stored.get(principal.orgId)), ...patch }
      yield* repo.put(principal.orgId, merged)
      yield* stored.invalidate(principal.orgId)
      return { ...defaults, ...merged } satisfies OrgSettings
    })

    return { get, update } as const
  }),
  dependencies: [SettingsRepo.Default]
}) {}
