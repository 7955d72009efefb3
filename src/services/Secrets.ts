import { Effect, Either, Option, Redacted } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { CredentialCipher } from "../../layers/CredentialCipher"
import { LanguageModels } from "../../layers/LanguageModels"
import { NotFound, Unavailable } from "../domain/Errors"
import type { OrgId } from "../domain/Ids"
import type { Principal } from "../domain/Principal"
import { LLM_KEY_SECRET, type PutSecrets } from "../domain/Secrets"
import { type SecretOwner, SecretsRepo } from "../repos/SecretsRepo"

/** Whose secrets: the organization's, or the calling user's own. */
export type SecretHolder = "organization" | "user"

const ownerOf = (principal: Principal, holder: SecretHolder): SecretOwner => (holder === "organization" ? "" : principal.userId)
// Bound to org, holder and name: a ciphertext copied to another row does not decrypt.
const bound = (orgId: OrgId, owner: SecretOwner, name: string) => ({ orgId, connectionId: `secret:${owner}:${name}` })

/** Organization and user secrets, encrypted with the credential cipher; their values are read only by the gateway itself (and llm-key). */
export class Secrets extends Effect.Service<Secrets>()("sluice/Secrets", {
  effect: Effect.gen(function* () {
    const repo = yield* SecretsRepo
    const cipher = yield* CredentialCipher
    const config = yield* AppConfig
    const models = yield* LanguageModels

    const list = Effect.fn("Secrets.list")(function* (principal: Principal, holder: SecretHolder) {
      const rows = yield* repo.list(principal.orgId, ownerOf(principal, holder))
      return { secrets: rows.map(({ name, updated_at, updated_by }) => ({ name, updated_at, updated_by })) }
    })

    const put = Effect.fn("Secrets.put")(function* (principal: Principal, holder: SecretHolder, body: PutSecrets) {
      const owner = ownerOf(principal, holder)
      const changes = Object.entries(body.secrets).map(([name, value]) => ({
        name,
        ciphertext: value === null ? null : cipher.encrypt(value, bound(principal.orgId, owner, name))
      }))
      yield* repo.apply(principal.orgId, owner, principal.userId, changes)
      return yield* list(principal, holder)
    })

    /** A secret's value for the gateway's own use; one stored under an old key is re-encrypted under the current one. */
    const value = (orgId: OrgId, owner: SecretOwner, name: string) =>
      Effect.gen(function* () {
        const row = yield* repo.find(orgId, owner, name)
        if (row === null) return Option.none<Redacted.Redacted<string>>()
        const opened = yield* cipher.decrypt(row.ciphertext, bound(orgId, owner, name)).pipe(
          Effect.mapError((e) => new Unavailable({ message: `The secret ${name} cannot be decrypted: ${e.message}` }))
        )
        if (opened.stale) {
          yield* repo.replaceCiphertext(orgId, owner, name, row.ciphertext, cipher.encrypt(opened.plaintext, bound(orgId, owner, name))).pipe(Effect.ignoreLogged)
        }
        return Option.some(Redacted.make(opened.plaintext))
      })

    /** An organization secret's value, for the gateway's own use (an eval remote's token). */
    const organizationSecret = (orgId: OrgId, name: string) => value(orgId, "", name)

    /** The organization's own model key (bring your own key), if it set one. */
    const organizationModelKey = (orgId: OrgId) => value(orgId, "", LLM_KEY_SECRET)

    /**
     * The model key for a runtime that calls the model itself: the organization's own; self-hosted,
     * else the gateway's. A cloud gateway never hands out its operator's key.
     */
    const llmKey = Effect.fn("Secrets.llmKey")(function* (principal: Principal) {
      const own = yield* organizationModelKey(principal.orgId)
      const key = Option.isSome(own) ? own : config.selfHosted ? models.gatewayKey : Option.none()
      if (Option.isNone(key)) return yield* new NotFound({ message: `No model key is set: PUT /api/org/secrets with ${LLM_KEY_SECRET}` })
      return {
        provider: models.provider,
        base_url: models.baseUrl,
        model: models.model,
        api_key: Redacted.value(key.value),
        source: Option.isSome(own) ? ("organization" as const) : ("gateway" as const)
      }
    })

    /** `sluice credentials reencrypt`: every secret still under an old key, under the current one. */
    const reencryptAll = Effect.gen(function* () {
      const outcome = { checked: 0, reencrypted: 0, unreadable: [] as Array<string> }
      for (const row of yield* repo.listAll()) {
        outcome.checked++
        const binding = bound(row.org_id, row.user_id, row.name)
        const opened = yield* Effect.either(cipher.decrypt(row.ciphertext, binding))
        if (Either.isLeft(opened)) outcome.unreadable.push(`${row.org_id}/${row.user_id === "" ? "" : `${row.user_id}/`}${row.name}`)
        else if (opened.right.stale) {
          yield* repo.replaceCiphertext(row.org_id, row.user_id, row.name, row.ciphertext, cipher.encrypt(opened.right.plaintext, binding))
          outcome.reencrypted++
        }
      }
      return outcome
    })

    return { list, put, organizationSecret, organizationModelKey, llmKey, reencryptAll } as const
  }),
  dependencies: [SecretsRepo.Default, CredentialCipher.Default, LanguageModels.Default]
}) {}
