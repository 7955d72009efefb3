import * as os from "node:os"
import * as path from "node:path"

/** An initialised PGlite data dir, made once per machine so a run's migrated store skips initdb. */
export const initialisedStoreDir = () => path.join(os.tmpdir(), "sluice-pglite-template-0.5.14")

/** The key under which the global setup provides this run's migrated store. */
export const MIGRATED_STORE = "migratedStore"

declare module "vitest" {
  export interface ProvidedContext {
    migratedStore: string
  }
}
