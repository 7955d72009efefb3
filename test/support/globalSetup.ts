import * as fs from "node:fs"
import { PGlite } from "@electric-sql/pglite"
import { buildServer } from "./Gateway"
import { templateDataDir } from "./template"

export default async function setup() {
  buildServer()
  const dir = templateDataDir()
  if (fs.existsSync(`${dir}/PG_VERSION`)) return
  const building = `${dir}.${process.pid}`
  const db = await PGlite.create({ dataDir: building })
  await db.close()
  fs.rmSync(dir, { recursive: true, force: true })
  fs.renameSync(building, dir)
}
