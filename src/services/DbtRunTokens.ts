import { createHmac, timingSafeEqual } from "node:crypto"
import { Effect, Schema } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { CredentialCipher } from "../../layers/CredentialCipher"
import { dbtProfileYaml, type MintRunToken } from "../domain/DbtRunToken"
import { Forbidden, InsufficientScope, NotAvailableHere } from "../domain/Errors"
import { KeyId, OrgId, UserId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { ActingPrincipals } from "./ActingPrincipals"
import { DbBranches } from "./DbBranches"

const PREFIX = "sdt_"
const LABEL = "dbt-run-token"

/** What a run token says, signed: who minted it, for which branch, until when. */
const Claims = Schema.Struct({
  v: Schema.Literal(1),
  run: Schema.String,
  org: OrgId,
  user: UserId,
  kind: Schema.Literal("api_key", "jwt", "local"),
  key: Schema.NullOr(KeyId),
  conn: Schema.String,
  project: Schema.String,
  branch: Schema.String,
  /** The branch's id: a branch deleted and made again under its name is another branch. */
  bid: Schema.String,
  exp: Schema.Number
})
export type RunClaims = typeof Claims.Type
const decodeClaims = Schema.decodeUnknownOption(Schema.parseJson(Claims))

/** Why a token opens nothing (for the audit log only: the client hears just that it is not valid), and its claims once its signature held. */
export interface TokenRefusal {
  readonly why: "malformed" | "bad_signature" | "expired" | "credential_gone" | "scope_gone"
  readonly claims: RunClaims | null
}
const refusal = (why: TokenRefusal["why"], claims: RunClaims | null = null): TokenRefusal => ({ why, claims })

/**
 * Run tokens for the dbt proxy: an HMAC (a per-org secret derived from the encryption key) over the
 * run, org, user, credential, connection, branch and expiry (60 s to 24 h). Any replica verifies one;
 * each use checks again that the credential that minted it still holds the dbt_proxy scope.
 */
export class DbtRunTokens extends Effect.Service<DbtRunTokens>()("sluice/DbtRunTokens", {
  effect: Effect.gen(function* () {
    const cipher = yield* CredentialCipher
    const acting = yield* ActingPrincipals
    const branches = yield* DbBranches
    const config = yield* AppConfig

    const signature = (org: string, payload: string) => createHmac("sha256", cipher.orgSecret(LABEL, org)).update(payload).digest()

    const mint = Effect.fn("DbtRunTokens.mint")(function* (principal: Principal, input: MintRunToken, host: string) {
      if (config.dbtProxyPort === 0) return yield* new NotAvailableHere({ message: "The dbt proxy is off: set SP_DBT_PROXY_PORT to run it" })
      if (principal.kind === "local") {
        return yield* new Forbidden({ message: "Run tokens are minted with an API key (or a signed-in user's session): deleting the key revokes its tokens, and local access has none" })
      }
      if (!principal.scopes.includes("dbt_proxy")) {
        return yield* new InsufficientScope({ message: "A run token needs the dbt_proxy scope: the proxy checks it again at each connection", required_scope: "dbt_proxy" })
      }
      const { branch } = yield* branches.upstreamOf(principal.orgId, input.connection_name, input.project, input.branch)
      const expires = Math.floor(Date.now() / 1000) + input.ttl_seconds
      const claims: RunClaims = {
        v: 1,
        run: input.run_id,
        org: principal.orgId,
        user: principal.userId,
        kind: principal.kind,
        key: principal.keyId,
        conn: input.connection_name,
        project: input.project,
        branch: input.branch,
        bid: branch.id,
        exp: expires
      }
      const payload = Buffer.from(JSON.stringify(claims)).toString("base64url")
      return {
        token: `${PREFIX}${payload}.${signature(principal.orgId, payload).toString("base64url")}`,
        expires_at: new Date(expires * 1000),
        host,
        port: config.dbtProxyPort,
        user: "dbt",
        dbname: branch.database,
        run_id: input.run_id
      }
    })

    /** The token's claims and who it acts as now; a TokenRefusal for a forged, expired or revoked one. */
    const verify = Effect.fn("DbtRunTokens.verify")(function* (token: string) {
      const [payload, mac] = token.startsWith(PREFIX) ? token.slice(PREFIX.length).split(".") : []
      if (payload === undefined || mac === undefined) return yield* Effect.fail(refusal("malformed"))
      const claims = decodeClaims(Buffer.from(payload, "base64url").toString("utf8"))
      if (claims._tag === "None") return yield* Effect.fail(refusal("malformed"))
      const expected = signature(claims.value.org, payload)
      const given = Buffer.from(mac, "base64url")
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return yield* Effect.fail(refusal("bad_signature"))
      if (claims.value.exp * 1000 <= Date.now()) return yield* Effect.fail(refusal("expired", claims.value))
      const principal = yield* actingFor(claims.value)
      return { claims: claims.value, principal }
    })

    /** Who a token's claims act as now: its minting credential, while it still holds dbt_proxy (checked at each connection and while a session is open). */
    const actingFor = (claims: RunClaims) =>
      acting.actingAs({ orgId: claims.org, userId: claims.user, principalKind: claims.kind, keyId: claims.key }, new Set(["dbt_proxy"] as const), "run token").pipe(
        Effect.mapError(() => refusal("credential_gone", claims)),
        Effect.filterOrFail(
          (principal) => principal.scopes.includes("dbt_proxy"),
          () => refusal("scope_gone", claims)
        )
      )

    /**
     * A profile for a branch whose password is read from SLUICE_DBT_TOKEN, and the command that mints
     * that token with the caller's own key (from SLUICE_API_KEY): no secret in it, for a conversation to carry.
     */
    const profileTemplate = Effect.fn("DbtRunTokens.profileTemplate")(function* (principal: Principal, connection: string, project: string, branchName: string, schema: string) {
      if (config.dbtProxyPort === 0) return yield* new NotAvailableHere({ message: "The dbt proxy is off: set SP_DBT_PROXY_PORT to run it" })
      const { branch } = yield* branches.upstreamOf(principal.orgId, connection, project, branchName)
      const host = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host
      const params = { profile: "default", target: "sluice", schema }
      const body = JSON.stringify({ connection_name: connection, project, branch: branchName, run_id: "dbt" })
      return {
        profiles_yml: dbtProfileYaml(params, { host, port: config.dbtProxyPort, user: "dbt", dbname: branch.database, password: "\"{{ env_var('SLUICE_DBT_TOKEN') }}\"", note: "The password is a run token from SLUICE_DBT_TOKEN." }),
        mint_command: `export SLUICE_DBT_TOKEN="$(curl -sf -H "x-api-key: $SLUICE_API_KEY" -H 'content-type: application/json' -d '${body}' http://${host}:${config.port}/api/dbt-proxy/run-tokens | sed -E 's/.*"token":"([^"]+)".*/\\1/')"`
      }
    })

    return { mint, verify, actingFor, profileTemplate } as const
  }),
  dependencies: [ActingPrincipals.Default, DbBranches.Default, CredentialCipher.Default]
}) {}
