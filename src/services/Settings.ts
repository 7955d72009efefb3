import { Effect, Option, Schema } from "effect"
import type { Principal } from "../domain/Principal"
import { type OrgSettings, SettingsPatch } from "../domain/Settings"
import { SettingsRepo } from "../repos/SettingsRepo"
import { storeUnavailable } from "./StoreUnavailable"

const storeDown = storeUnavailable("settings store")
const decodeStored = Schema.decodeUnknownOption(Schema.Struct(SettingsPatch.fields))

export class Settings extends Effect.Service<Settings>()("sluice/Settings", {
  effect: Effect.gen(function* () {
    const repo = yield* SettingsRepo
    const defaults: OrgSettings = {
      default_row_limit: 10_000,
      mcp_default_row_limit: 1_000,
      query_timeout_seconds: 30,
      mcp_tools: "full"
    }

    const stored = (principal: Principal) =>
      repo.get(principal.orgId).pipe(
        storeDown,
        Effect.map((json) => Option.getOrElse(decodeStored(json), () => ({})))
      )

    const get = (principal: Principal) => Effect.map(stored(principal), (s): OrgSettings => ({ ...defaults, ...s }))

    /** Merges a validated patch over the org's stored settings. */
    const update = Effect.fn("Settings.update")(function* (principal: Principal, patch: SettingsPatch) {
      const merged = { ...(yield* stored(principal)), ...patch }
      yield* repo.put(principal.orgId, merged).pipe(storeDown)
      return { ...defaults, ...merged } satisfies OrgSettings
    })

    return { get, update } as const
  }),
  dependencies: [SettingsRepo.Default]
}) {}
