import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
    // A worker loads the gateway's modules once for all its files; each file starts and stops its own gateways.
    isolate: false,
    minWorkers: 1
  }
})
