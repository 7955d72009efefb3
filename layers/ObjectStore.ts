import { Effect, Option, Redacted } from "effect"
import { Unavailable } from "../src/domain/Errors"
import { AppConfig } from "./AppConfig"
import { filesystemObjects } from "./objects/FilesystemObjects"
import type { ObjectBackend } from "./objects/ObjectBackend"
import { s3Objects } from "./objects/S3Objects"

/**
 * The deployment's object store: the filesystem store under SP_DATA_DIR (self-hosted default), an
 * S3-compatible bucket (SP_S3_BUCKET), or none (cloud without a bucket: evaluations are refused).
 */
export class ObjectStore extends Effect.Service<ObjectStore>()("sluice/ObjectStore", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const backend: Option.Option<ObjectBackend> =
      config.objectStore === "filesystem"
        ? Option.some(filesystemObjects(config.objectStoreDir))
        : config.objectStore === "s3"
          ? Option.some(
              s3Objects({
                bucket: Option.getOrThrow(config.s3Bucket),
                region: config.s3Region,
                endpoint: Option.getOrNull(Option.map(config.s3Endpoint, (url) => url.toString())),
                forcePathStyle: Option.getOrElse(config.s3ForcePathStyle, () => Option.isSome(config.s3Endpoint)),
                credentials: Option.isSome(config.s3AccessKeyId) && Option.isSome(config.s3SecretAccessKey)
                  ? { accessKeyId: config.s3AccessKeyId.value, secretAccessKey: Redacted.value(config.s3SecretAccessKey.value) }
                  : null
              })
            )
          : Option.none()
    return {
      configured: Option.isSome(backend),
      /** The store, or the refusal evaluation routes give when the deployment has none. */
      backend: Option.match(backend, {
        onNone: () => Effect.fail(new Unavailable({ message: "Evidence storage is not configured: set SP_S3_BUCKET (and its endpoint and keys) or SP_OBJECT_STORE=filesystem" })),
        onSome: Effect.succeed
      })
    }
  })
}) {}
