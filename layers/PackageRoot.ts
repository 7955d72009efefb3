import * as path from "node:path"

/** The package's folder: this module sits one level below it, in layers/ as source and in dist/ when built. */
export const PACKAGE_ROOT = path.resolve(import.meta.dirname, "..")
