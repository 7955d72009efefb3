import * as os from "node:os"
import { Effect, Option } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import type { Principal } from "../domain/Principal"
import { ApiKeysRepo } from "../repos/ApiKeysRepo"
import { OrgsRepo } from "../repos/OrgsRepo"
import { MAX_METRICS_STREAMS } from "./Metrics"

export const MAX_BODY_BYTES = 2 * 1024 * 1024

/** What the caller's plan allows and how this gateway is secured. */
export class Posture extends Effect.Service<Posture>()("sluice/Posture", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const orgs = yield* OrgsRepo
    const keys = yield* ApiKeysRepo

    const plan = Effect.fn("Posture.plan")(function* (principal: Principal) {
      const name = config.selfHosted ? "self-hosted" : ((yield* orgs.plan(principal.orgId)) ?? "team")
      return {
        plan: name,
        deployment_mode: config.deploymentMode,
        audit_retention_days: config.selfHosted ? null : Option.getOrNull(config.auditRetentionDays),
        limits: {
          per_key_rpm: config.perKeyRpm,
          per_org_rpm: config.perOrgRpm,
          max_export_rows: config.maxExportRows,
          request_body_bytes: MAX_BODY_BYTES,
          metrics_streams: MAX_METRICS_STREAMS
        }
      }
    })

    const securityStatus = Effect.fn("Posture.securityStatus")(function* (principal: Principal) {
      return {
        deployment_mode: config.deploymentMode,
        store: Option.isSome(config.databaseUrl) ? ("postgresql" as const) : ("embedded" as const),
        tenant_isolation: "row_level_security" as const,
        local_access: config.localAccess,
        jwt_sessions: Option.isSome(config.jwksUrl),
        trusted_proxies: config.trustedProxies.length,
        allowed_hosts: config.allowedHosts,
        rate_limit_store: Option.isSome(config.redisUrl) ? ("redis" as const) : ("memory" as const),
        keys: yield* keys.summary(principal.orgId)
      }
    })

    /** Where this gateway's connections to customer databases come from, for their firewalls. */
    const networkInfo = Effect.sync(() => {
      const interfaces = Object.entries(os.networkInterfaces()).flatMap(([name, addresses]) =>
        (addresses ?? []).filter((a) => !a.internal).map((a) => ({ name, address: a.address, family: a.family }))
      )
      const configured = config.egressIps.length > 0
      return {
        hostname: os.hostname(),
        egress_ips: configured ? config.egressIps : interfaces.map((i) => i.address),
        egress_ips_source: configured ? ("configured" as const) : ("interfaces" as const),
        interfaces
      }
    })

    return { plan, securityStatus, networkInfo } as const
  }),
  dependencies: [OrgsRepo.Default, ApiKeysRepo.Default]
}) {}
