import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { Foundation } from "../../app/Foundation"
import { REPO_ROOT, tempDataDir } from "../support/Gateway"

/** Every module of the gateway's own code that can define a service. */
const modules = ["src", "layers", "actors"]
  .flatMap((dir) => fs.readdirSync(path.join(REPO_ROOT, dir), { recursive: true, encoding: "utf8" }).map((file) => path.join(dir, file)))
  .filter((file) => file.endsWith(".ts") && !/^src\/(web|cli|migrations)\/|^src\/main\.ts$/.test(file))

// What is claimed here of each Default (it needs the foundation alone) is what the test checks by building it.
const isService = (value: unknown): value is { readonly key: string; readonly Default: Layer.Layer<unknown, unknown, Layer.Layer.Success<typeof Foundation>> } =>
  typeof value === "function" && "Default" in value && Layer.isLayer(value.Default)

const OnTheFoundation = Foundation.pipe(
  Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["SP_DATA_DIR", tempDataDir()], ["SP_WEB_PORT", "0"]]))))
)

describe("the composition root is a plain merge", () => {
  layer(OnTheFoundation, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("every service builds from its own Default on the foundation alone: it lists every service it is built on", () =>
      Effect.gen(function* () {
        const services = (yield* Effect.promise(() => Promise.all(modules.map((file) => import(path.join(REPO_ROOT, file)))))).flatMap((module) =>
          Object.values(module as Record<string, unknown>).filter(isService)
        )
        expect(services.length).toBeGreaterThan(30)
        const unbuilt: Array<string> = []
        for (const service of services) {
          const built = yield* Effect.exit(Effect.scoped(Layer.build(service.Default)))
          if (Exit.isFailure(built)) unbuilt.push(service.key)
        }
        expect(unbuilt).toEqual([])
      })
    )
  })
})
