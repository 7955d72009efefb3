import type { Readable } from "node:stream"
import { NodeStream } from "@effect/platform-node"
import * as yauzl from "yauzl"
import { type SetFiles, SetFilesRefusal } from "../../src/domain/EvalSet"
import type { ObjectBackend } from "./ObjectBackend"

const MAX_ENTRIES = 20_000
const S_IFMT = 0o170000
const S_IFREG = 0o100000
const UNIX = 3

/** Ranges of an object in the store, as yauzl reads an archive: its directory and each entry's bytes, never the whole. */
class StoreRangeReader extends yauzl.RandomAccessReader {
  constructor(
    private readonly backend: ObjectBackend,
    private readonly key: string
  ) {
    super()
  }
  override _readStreamForRange(start: number, end: number): Readable {
    return NodeStream.toReadableNever(this.backend.getRange(this.key, start, end))
  }
}

interface Listed {
  readonly zip: yauzl.ZipFile
  readonly entries: ReadonlyMap<string, yauzl.Entry>
  readonly listing: ReadonlyArray<{ readonly path: string; readonly regular: boolean }>
}

/** Whether an entry is a plain file: made on Unix, its mode's type says so (or it has none, as Python's zipfile writes); made elsewhere, unless its name ends in /. */
const isRegular = (entry: yauzl.Entry) => {
  if (entry.fileName.endsWith("/")) return false
  if (entry.versionMadeBy >> 8 !== UNIX) return true
  const type = (entry.externalFileAttributes >>> 16) & S_IFMT
  return type === 0 || type === S_IFREG
}

/**
 * An eval set in a zip archive in the object store, read in place. Entry names are checked by
 * yauzl (no absolute paths, no `..`, no backslashes) and every size it inflates is checked against
 * the one the archive declares. A set zipped as its folder (one top folder holding everything) is
 * read from inside that folder.
 */
export const zipSetFiles = (backend: ObjectBackend, key: string, size: number): SetFiles => {
  let opened: Promise<Listed> | undefined
  const open = () =>
    (opened ??= new Promise<Listed>((resolve, reject) => {
      yauzl.fromRandomAccessReader(new StoreRangeReader(backend, key), size, { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true }, (error, zip) => {
        if (error !== null) return reject(new SetFilesRefusal(`not a zip archive (${error.message})`))
        const found: Array<yauzl.Entry> = []
        zip.on("error", (e: Error) => reject(new SetFilesRefusal(`the archive is damaged (${e.message})`)))
        zip.on("entry", (entry: yauzl.Entry) => {
          if (found.length >= MAX_ENTRIES) return reject(new SetFilesRefusal(`the archive holds more than ${MAX_ENTRIES} entries`))
          found.push(entry)
          zip.readEntry()
        })
        zip.on("end", () => {
          const names = found.map((e) => e.fileName)
          const top = names[0]?.split("/")[0]
          const wrapped = top !== undefined && !names.some((n) => n === "eval.yaml" || n === "eval.yml" || n === "eval.json") && names.every((n) => n.startsWith(`${top}/`))
          const relative = (name: string) => (wrapped ? name.slice(top!.length + 1) : name)
          const files = found.filter((e) => !e.fileName.endsWith("/"))
          const seen = new Set<string>()
          for (const e of files) {
            if (seen.has(e.fileName)) return reject(new SetFilesRefusal(`the archive holds two entries named ${relative(e.fileName)}`))
            seen.add(e.fileName)
          }
          resolve({
            zip,
            entries: new Map(files.map((e) => [relative(e.fileName), e])),
            listing: files.filter((e) => relative(e.fileName) !== "").map((e) => ({ path: relative(e.fileName), regular: isRegular(e) }))
          })
        })
        zip.readEntry()
      })
    }))
  return {
    list: async () => (await open()).listing,
    read: async (file, maxBytes) => {
      const { zip, entries } = await open()
      const entry = entries.get(file)
      if (entry === undefined || !isRegular(entry) || entry.uncompressedSize > maxBytes) return null
      const stream = await new Promise<Readable>((resolve, reject) => zip.openReadStream(entry, (error, readable) => (error === null ? resolve(readable) : reject(error))))
      const chunks: Array<Buffer> = []
      for await (const chunk of stream) chunks.push(chunk as Buffer)
      return Buffer.concat(chunks).toString("utf8")
    }
  }
}
