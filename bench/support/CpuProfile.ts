// A .cpuprofile (node --cpu-prof) summarized for bench/README.md.

export interface CpuProfile {
  readonly nodes: ReadonlyArray<{ readonly id: number; readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number } }>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** The package a frame's file belongs to: a node_modules package, the gateway's bundle, a Node internal, or the VM's own. */
const packageOf = (url: string, functionName: string) => {
  if (url.includes("node_modules/")) {
    const parts = url.split("node_modules/").at(-1)!.split("/")
    return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!
  }
  if (url.includes("/dist/")) return "sluice (dist)"
  if (url.startsWith("node:")) return "node internals"
  if (url !== "") return url
  return functionName.startsWith("(") ? functionName : `(${functionName || "native"})`
}

/** Self time by package and by function, per unit of work (`per`: "request", "run"…). */
export const summarizeProfile = (profile: CpuProfile, units: number, per: string) => {
  const selfTime = new Map<number, number>()
  profile.samples.forEach((id, i) => selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const byPackage = new Map<string, number>()
  const byFunction = new Map<string, number>()
  let total = 0
  for (const node of profile.nodes) {
    const time = selfTime.get(node.id) ?? 0
    total += time
    const { functionName, url, lineNumber } = node.callFrame
    const pkg = packageOf(url, functionName)
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + time)
    const fn = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + time)
  }
  const top = (times: Map<string, number>, n: number) =>
    [...times]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, time]) => `| ${((time / total) * 100).toFixed(1)} % | ${(time / 1000 / units).toFixed(3)} | \`${name}\` |`)
      .join("\n")
  const header = `| share | ms per ${per} | |\n|---:|---:|---|`
  return `By package (self time; the whole process lifetime, start-up included):\n\n${header}\n${top(byPackage, 15)}\n\nBy function:\n\n${header}\n${top(byFunction, 30)}`
}
