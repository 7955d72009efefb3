import { execFileSync } from "node:child_process"
import * as path from "node:path"

export const REPO_ROOT = path.resolve(import.meta.dirname, "../..")

/** The gateway and the CLI as `npm start` runs them: the bundles `npm run build:server` writes. */
export const GATEWAY_ENTRY = "dist/main.js"
export const CLI_ENTRY = "dist/cli.js"

/** Builds the bundles from the current source (the test run's global setup does, first; each bench:* script runs build:server itself). */
export const buildServer = () => execFileSync("npm", ["run", "--silent", "build:server"], { cwd: REPO_ROOT, stdio: "inherit" })
