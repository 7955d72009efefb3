import * as fs from "node:fs"
import * as path from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Data, Effect } from "effect"

export class StoreError extends Data.TaggedError("StoreError")<{ readonly message: string }> {}

/** The pg client finds a unix socket as `<dir>/.s.PGSQL.<port>`. */
export const EMBEDDED_PORT = 5432
const socketFile = (dataDir: string) => path.join(dataDir, `.s.PGSQL.${EMBEDDED_PORT}`)
const lockFile = (dataDir: string) => path.join(dataDir, "store.lock")

const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const tryCreateLock = (file: string): "created" | "exists" => {
  try {
    fs.writeFileSync(file, String(process.pid), { flag: "wx", mode: 0o600 })
    return "created"
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return "exists"
    throw error
  }
}

/** One process per embedded data dir: a second opener gets a clear error instead of a corrupt store. */
export const acquireDataDirLock = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
        const file = lockFile(dataDir)
        if (tryCreateLock(file) === "created") return file
        const holder = Number(fs.readFileSync(file, "utf8").trim())
        if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processAlive(holder)) {
          throw new StoreError({
            message: `the embedded store in ${dataDir} is in use by process ${holder}; stop that gateway first or set DATABASE_URL`
          })
        }
        fs.rmSync(file, { force: true })
        if (tryCreateLock(file) === "created") return file
        throw new StoreError({ message: `the embedded store in ${dataDir} was locked by another process while starting` })
      },
      catch: (error) =>
        error instanceof StoreError ? error : new StoreError({ message: `cannot lock the data dir ${dataDir}: ${String(error)}` })
    }),
    (file) => Effect.sync(() => fs.rmSync(file, { force: true }))
  )

/** The store's files are the operator's alone: new ones are made without group or other bits, and ones an older start left open are tightened. */
const makePrivate = (dataDir: string) =>
  Effect.try({
    try: () => {
      process.umask(0o077)
      for (const entry of ["", ...fs.readdirSync(dataDir, { recursive: true, encoding: "utf8" })]) {
        const file = path.join(dataDir, entry)
        const stat = fs.lstatSync(file)
        if (!stat.isSymbolicLink() && (stat.mode & 0o077) !== 0) fs.chmodSync(file, stat.mode & 0o700)
      }
    },
    catch: (error) => new StoreError({ message: `cannot make the data dir ${dataDir} private: ${String(error)}` })
  })

/** PGlite in this process, served on a private unix socket so the ordinary pg client can talk to it. */
export const startEmbeddedStore = (dataDir: string) =>
  Effect.gen(function* () {
    yield* acquireDataDirLock(dataDir)
    yield* makePrivate(dataDir)
    const socketPath = socketFile(dataDir)
    if (Buffer.byteLength(socketPath) > 100) {
      return yield* new StoreError({ message: `SP_DATA_DIR is too long for a unix socket path (${socketPath.length} bytes); use a shorter path` })
    }
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => PGlite.create({ dataDir: path.join(dataDir, "pgdata") }),
        catch: (error) => new StoreError({ message: `cannot open the embedded store in ${dataDir}: ${String(error)}` })
      }),
      (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
    )
    // PGlite sets modes of its own on files it writes as it opens (pg_internal.init): tighten those too.
    yield* makePrivate(dataDir)
    fs.rmSync(socketPath, { force: true })
    const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 16 })
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => server.start(),
        catch: (error) => new StoreError({ message: `cannot serve the embedded store: ${String(error)}` })
      }),
      () => Effect.promise(() => server.stop()).pipe(Effect.ignore)
    )
    fs.chmodSync(socketPath, 0o600)
    return { socketDir: dataDir, port: EMBEDDED_PORT } as const
  })
