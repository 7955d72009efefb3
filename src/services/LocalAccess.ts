import * as path from "node:path"
import { Effect, Option } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { KEY_PATTERN } from "../domain/ApiKey"
import { KeyId, LOCAL_ORG, LOCAL_USER } from "../domain/Ids"
import { ALL_SCOPES } from "../domain/Scope"
import { ApiKeysRepo } from "../repos/ApiKeysRepo"
import { OrgsRepo } from "../repos/OrgsRepo"
import { generateRawKey, hashKey, keyPrefix } from "./KeyMaterial"
import { readOrCreateSecretFile } from "./SecretFile"

const LOCAL_KEY_FILE = ".local_api_key"

/** Reads the local key from the data dir, creating it (mode 600) on first start. */
const readOrCreateLocalKey = (dataDir: string) =>
  Effect.sync(() => readOrCreateSecretFile(path.join(dataDir, LOCAL_KEY_FILE), generateRawKey, (text) => KEY_PATTERN.test(text)))

/** Self-hosted bootstrap: the `local` org and user, and in local mode the key a loopback browser may fetch. */
export class LocalAccess extends Effect.Service<LocalAccess>()("sluice/LocalAccess", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    if (!config.selfHosted) return { localKey: Option.none<string>() }
    const orgs = yield* OrgsRepo
    yield* orgs.ensureMember({ orgId: LOCAL_ORG, orgName: "Local", userId: LOCAL_USER, role: "admin" })
    if (!config.localAccess) return { localKey: Option.none<string>() }
    const keys = yield* ApiKeysRepo
    const raw = yield* readOrCreateLocalKey(config.dataDir)
    const hash = hashKey(raw)
    yield* keys.ensureLocalKey({
      id: KeyId.make(`key_local_${hash.slice(0, 16)}`),
      org_id: LOCAL_ORG,
      user_id: LOCAL_USER,
      name: "local",
      prefix: keyPrefix(raw),
      scopes: ALL_SCOPES,
      key_hash: hash
    })
    return { localKey: Option.some(raw) }
  }),
  dependencies: [OrgsRepo.Default, ApiKeysRepo.Default]
}) {}
