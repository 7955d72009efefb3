import { Layer } from "effect"
import { AuditRetentionLoop } from "../actors/loops/AuditRetentionLoop"
import { AuditRepo } from "../src/repos/AuditRepo"
import { ApiKeys } from "../src/services/ApiKeys"
import { Audit } from "../src/services/Audit"
import { Authenticator } from "../src/services/Authenticator"
import { LocalAccess } from "../src/services/LocalAccess"
import { Metrics } from "../src/services/Metrics"
import { Posture } from "../src/services/Posture"
import { Settings } from "../src/services/Settings"
import { AppConfig } from "./AppConfig"
import { HttpServerLive } from "./HttpServer"
import { Leases } from "./Leases"
import { RateLimits } from "./RateLimits"
import { StoreLive } from "./Store"

const Foundation = StoreLive.pipe(Layer.provideMerge(AppConfig.Default))

const ServicesLive = Layer.mergeAll(
  ApiKeys.Default,
  Authenticator.Default,
  Audit.Default,
  AuditRepo.Default,
  LocalAccess.Default,
  Metrics.Default,
  Posture.Default,
  Settings.Default,
  RateLimits.Default,
  Leases.Default
).pipe(Layer.provideMerge(Foundation))

/** The single composition root: the HTTP server and every background loop, on one store. */
export const AppLive = Layer.mergeAll(HttpServerLive, AuditRetentionLoop).pipe(Layer.provide(ServicesLive))
