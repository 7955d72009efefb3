import * as path from "node:path"
import { Data, Effect, Option } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { KEY_PATTERN } from "../domain/ApiKey"
import { LOCAL_ORG, LOCAL_USER, localKeyId } from "../domain/Ids"
import { ALL_SCOPES } from "../domain/Scope"
import { ApiKeysRepo } from "../repos/ApiKeysRepo"
import { OrgsRepo } from "../repos/OrgsRepo"
import { generateRawKey, hashKey, keyPrefix } from "./KeyMaterial"
import { readOrCreateSecretFile } from "../../layers/SecretFile"

const LOCAL_KEY_FILE = ".local_api_key"
const LOCAL_KEY_NAME = "local"

export class LocalKeyUnregistered extends Data.TaggedError("LocalKeyUnregistered")<{ readonly message: string }> {}

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
    const prefix = keyPrefix(raw)
    const registered = yield* keys.ensureLocalKey({
      id: localKeyId(hash),
      org_id: LOCAL_ORG,
      user_id: LOCAL_USER,
      name: LOCAL_KEY_NAME,
      prefix,
      scopes: ALL_SCOPES,
      key_hash: hash
    })
    if (!registered) {
      return yield* new LocalKeyUnregistered({
        message: `the local key cannot be registered: keys named "${LOCAL_KEY_NAME}" and "${LOCAL_KEY_NAME} ${prefix}" exist; delete one of them`
      })
    }
    return { localKey: Option.some(raw) }
  }),
  dependencies: [OrgsRepo.Default, ApiKeysRepo.Default]
}) {}
