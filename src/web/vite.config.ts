import * as path from "node:path"
import { defineConfig } from "vite"

// Built into dist/web, which the gateway serves on SP_WEB_PORT (app/WebServer.ts).
export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  esbuild: { jsx: "automatic" },
  build: {
    outDir: path.resolve(import.meta.dirname, "../../dist/web"),
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
    reportCompressedSize: false
  },
  logLevel: "warn"
})
