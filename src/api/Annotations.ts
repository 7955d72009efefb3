import { Context } from "effect"
import type { Scope } from "../domain/Scope"

/** The scope an endpoint requires; "authenticated" means any valid credential. Every /api endpoint has one. */
export class RequiredScope extends Context.Tag("sluice/RequiredScope")<RequiredScope, Scope | "authenticated">() {}

/** Which per-IP budget an endpoint draws from; unannotated endpoints are "general". */
export class RateClass extends Context.Tag("sluice/RateClass")<RateClass, "auth" | "general" | "expensive">() {}
