import * as fsp from "node:fs/promises"
import * as path from "node:path"

const STATS_AT_ONCE = 64
// What each file or folder counts at least: a block of the disk's, so many empty files (each an inode) count as what they cost.
const ENTRY_BYTES = 4096

/**
 * The disk a directory's tree takes, never following a link: a file counts its size or its blocks,
 * whichever is more (a sparse file takes its whole size once copied), and every entry a block at
 * least. Off the event loop (code can make many thousands of files), and it stops counting once
 * past `stopAbove` (so a folder of millions of files costs a bounded scan).
 */
export const diskBytes = async (dir: string, stopAbove = Number.POSITIVE_INFINITY): Promise<number> => {
  let total = 0
  const pending = [dir]
  while (pending.length > 0 && total <= stopAbove) {
    const current = pending.pop()!
    const names = await fsp.readdir(current).catch(() => [] as Array<string>)
    for (let i = 0; i < names.length && total <= stopAbove; i += STATS_AT_ONCE) {
      const found = await Promise.all(names.slice(i, i + STATS_AT_ONCE).map((name) => fsp.lstat(path.join(current, name)).then((stat) => ({ name, stat }), () => undefined)))
      for (const entry of found) {
        if (entry === undefined) continue
        total += Math.max(entry.stat.blocks * 512, entry.stat.isFile() ? entry.stat.size : 0, ENTRY_BYTES)
        if (entry.stat.isDirectory()) pending.push(path.join(current, entry.name))
      }
    }
  }
  return total
}
