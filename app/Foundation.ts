import { Layer } from "effect"
import { AppConfig } from "../layers/AppConfig"
import { StoreLive } from "../layers/Store"

/** Settings and the migrated store: what the gateway and every CLI command stand on. */
export const Foundation = StoreLive.pipe(Layer.provideMerge(AppConfig.Default))
