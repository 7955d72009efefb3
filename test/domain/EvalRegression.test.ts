import { describe, expect, it } from "vitest"
import { type ComparedRun, checkRegression, mcnemarP, type TaskOutcome } from "../../src/domain/EvalRegression"

/** A seeded generator for the simulated histories (mulberry32). */
const generator = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const TASKS = 50
const REPEATS = 3
const FLIP = 0.1

/** A run of an eval set whose tasks' true verdicts are `truth`: each attempt comes out the other way with probability FLIP. */
const simulatedRun = (random: () => number, runId: string, truth: ReadonlyArray<boolean>): ComparedRun => ({
  run_id: runId,
  tasks: truth.map((right, index): TaskOutcome => {
    let correct = 0
    for (let attempt = 0; attempt < REPEATS; attempt += 1) if (right !== random() < FLIP) correct += 1
    return { task_id: `t${index}`, attempts: REPEATS, correct }
  })
})

/** Runs of one eval set and fingerprint, each compared with the runs before it, and in its place a run where five right tasks broke (10 points). */
const simulatedHistory = (seed: number, runs: number) => {
  const random = generator(seed)
  const accuracy = 0.5 + random() * 0.45
  const truth = Array.from({ length: TASKS }, () => random() < accuracy)
  const broken = truth.map((right, index) => right && truth.slice(0, index + 1).filter(Boolean).length <= 5 ? false : right)
  const history: Array<ComparedRun> = []
  let noiseAlerts = 0
  let dropsCaught = 0
  let checked = 0
  for (let n = 0; n < runs + 5; n += 1) {
    const run = simulatedRun(random, `r${seed}-${n}`, truth)
    if (history.length >= 5) {
      checked += 1
      const trailing = history.slice(-5).reverse()
      if (checkRegression(run, trailing, 10)?.regression) noiseAlerts += 1
      if (checkRegression(simulatedRun(random, `d${seed}-${n}`, broken), trailing, 10)?.regression) dropsCaught += 1
    }
    history.push(run)
  }
  return { noiseAlerts, dropsCaught, checked }
}

describe("regressions against the trailing comparable runs", () => {
  it("over simulated histories (50 tasks × 3 attempts, each attempt flipping with probability 0.1) the alert fires on at most 2 % of noise-only runs and catches at least 95 % of 10-point drops", () => {
    let noise = 0
    let caught = 0
    let checked = 0
    for (const seed of [11, 23, 37, 41]) {
      const result = simulatedHistory(seed, 50)
      noise += result.noiseAlerts
      caught += result.dropsCaught
      checked += result.checked
    }
    expect(checked).toBe(200)
    expect(noise / checked).toBeLessThanOrEqual(0.02)
    expect(caught / checked).toBeGreaterThanOrEqual(0.95)
  })

  const run = (runId: string, verdicts: string): ComparedRun => ({
    run_id: runId,
    tasks: [...verdicts].map((verdict, index) => ({ task_id: `t${index}`, attempts: 1, correct: verdict === "1" ? 1 : 0 }))
  })

  it("a run with no comparable run before it is checked against nothing", () => {
    expect(checkRegression(run("r1", "1111"), [], 10)).toBeNull()
  })

  it("a drop over the threshold is a regression, with the tasks that flipped, the paired p and the tasks already flaky", () => {
    const trailing = [run("r4", "1111111111"), run("r3", "1111111110"), run("r2", "1111111101")]
    const check = checkRegression(run("r5", "0011111111"), trailing, 10)!
    expect(check).toMatchObject({ baseline_run_ids: ["r4", "r3", "r2"], baseline: 90, accuracy: 80, regression: null })
    const worse = checkRegression(run("r5", "0001111111"), trailing, 10)!
    expect(worse).toMatchObject({ baseline: 90, accuracy: 70, drop: 20, regression: "drop_over_threshold" })
    expect(worse.flipped).toEqual([
      { task_id: "t0", change: "broke" },
      { task_id: "t1", change: "broke" },
      { task_id: "t2", change: "broke" }
    ])
    expect(worse.mcnemar_p).toBeCloseTo(0.25, 6)
    expect([...worse.flaky].sort()).toEqual(["t8", "t9"])
  })

  it("only the newest five comparable runs make the baseline", () => {
    const older = Array.from({ length: 6 }, (_, index) => run(`old${index}`, "0000000000"))
    const check = checkRegression(run("now", "1111111111"), [...Array.from({ length: 5 }, (_, index) => run(`new${index}`, "1111111110")), ...older], 10)!
    expect(check.baseline_run_ids).toEqual(["new0", "new1", "new2", "new3", "new4"])
    expect(check).toMatchObject({ baseline: 90, accuracy: 100, drop: -10, regression: null })
  })

  it("checking the same run again gives the same figures", () => {
    const random = generator(7)
    const truth = Array.from({ length: 50 }, (_, index) => index % 4 !== 0)
    const trailing = Array.from({ length: 5 }, (_, index) => simulatedRun(random, `h${index}`, truth))
    const current = simulatedRun(random, "now", truth.map((right, index) => right && index > 8))
    expect(checkRegression(current, trailing, 10)).toEqual(checkRegression(current, trailing, 10))
  })

  it("a run with no graded attempt is checked against nothing, and is no baseline (attack 42 F5)", () => {
    const ungraded: ComparedRun = { run_id: "none", tasks: [{ task_id: "t0", attempts: 0, correct: 0 }] }
    expect(checkRegression(ungraded, [run("r1", "1111111111")], 10)).toBeNull()
    const check = checkRegression(run("now", "1111111110"), [ungraded, run("r1", "1111111111")], 10)!
    expect(check).toMatchObject({ baseline_run_ids: ["r1"], baseline: 100, drop: 10 })
  })

  it("McNemar's exact p", () => {
    expect(mcnemarP(0, 0)).toBe(1)
    expect(mcnemarP(5, 0)).toBeCloseTo(0.0625, 6)
    expect(mcnemarP(6, 1)).toBeCloseTo(0.125, 6)
    expect(mcnemarP(3, 3)).toBe(1)
  })
})
