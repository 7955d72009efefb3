import * as os from "node:os"
import * as path from "node:path"

/** An initialised PGlite data dir, made once per machine so each embedded gateway skips initdb. */
export const templateDataDir = () => path.join(os.tmpdir(), "sluice-pglite-template-0.5.14")
