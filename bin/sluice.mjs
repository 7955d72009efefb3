#!/usr/bin/env node
import * as fs from "node:fs"

// The built CLI when there is one (npm start and npm run build make it); otherwise the source, transpiled as it loads.
const built = new URL("../dist/cli.js", import.meta.url)
if (fs.existsSync(built)) {
  await import(built.href)
} else {
  const { register } = await import("tsx/esm/api")
  register()
  await import("../src/cli/main.ts")
}
