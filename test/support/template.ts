import * as os from "node:os"
import * as path from "node:path"

/** An initialised PGlite data dir, made once per machine so a run's migrated store skips initdb. */
export const initialisedStoreDir = () => path.join(os.tmpdir(), "sluice-pglite-template-0.5.14")

/** The environment variable in which the global setup tells the test workers (started after it) where this run's migrated store is. */
export const MIGRATED_STORE = "SLUICE_TEST_MIGRATED_STORE"
