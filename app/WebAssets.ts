import * as fs from "node:fs"
import * as path from "node:path"
import { gzipSync } from "node:zlib"
import { PACKAGE_ROOT } from "../layers/PackageRoot"

/** Where `npm run build:web` writes the web app. */
export const WEB_DIST = path.join(PACKAGE_ROOT, "dist/web")

export interface WebAsset {
  readonly body: Uint8Array
  readonly gzipped: Uint8Array | null
  readonly contentType: string
  /** Vite names built assets by their content hash, so they never change under one name. */
  readonly immutable: boolean
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8"
}

const COMPRESSIBLE = /^(text\/|application\/json|image\/svg)/

/** The built app, read once at start (it is small) and served from memory, pre-compressed. */
export const loadWebAssets = (dir: string = WEB_DIST): ReadonlyMap<string, WebAsset> => {
  const assets = new Map<string, WebAsset>()
  if (!fs.existsSync(path.join(dir, "index.html"))) return assets
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const file = path.join(entry.parentPath, entry.name)
    const urlPath = `/${path.relative(dir, file).split(path.sep).join("/")}`
    const body = fs.readFileSync(file)
    const contentType = TYPES[path.extname(file)] ?? "application/octet-stream"
    assets.set(urlPath, {
      body,
      gzipped: COMPRESSIBLE.test(contentType) && body.length > 1024 ? gzipSync(body) : null,
      contentType,
      immutable: urlPath.startsWith("/assets/")
    })
  }
  return assets
}
