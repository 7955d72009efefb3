import { HttpApiMiddleware } from "@effect/platform"
import { AuthFailure } from "../domain/Errors"
import { CurrentPrincipal } from "../domain/Principal"

/** Authenticates, checks the endpoint's scope and applies the per-IP, per-key and per-org limits. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("sluice/Authentication", {
  failure: AuthFailure,
  provides: CurrentPrincipal
}) {}
