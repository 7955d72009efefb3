import { Schema } from "effect"

/** How one task did in one run: of its attempts, how many were graded CORRECT. */
export interface TaskOutcome {
  readonly task_id: string
  readonly attempts: number
  readonly correct: number
}

/** A finished run as a regression check compares it: its tasks' outcomes. */
export interface ComparedRun {
  readonly run_id: string
  readonly tasks: ReadonlyArray<TaskOutcome>
}

export const FlippedTask = Schema.Struct({
  task_id: Schema.String,
  /** Correct in the baseline and not now (`broke`), or the other way round (`fixed`). */
  change: Schema.Literal("broke", "fixed")
})

export const RegressionCheck = Schema.Struct({
  /** The comparable runs the run was compared with, newest first. */
  baseline_run_ids: Schema.Array(Schema.String),
  /** Their median accuracy, in points (0–100). */
  baseline: Schema.Number,
  accuracy: Schema.Number,
  /** Baseline minus accuracy, in points: positive is worse. */
  drop: Schema.Number,
  flipped: Schema.Array(FlippedTask),
  /** Exact two-sided McNemar p on the tasks' verdicts, this run against the baseline's. */
  mcnemar_p: Schema.Number,
  /** Tasks whose verdict already changed between earlier comparable runs: their flips say little. */
  flaky: Schema.Array(Schema.String),
  /** How likely tasks this stable would break this much by chance alone (each task's own rate of failing in the comparable runs). */
  evidence_p: Schema.Number,
  /** Why it is a regression: the drop is over the threshold, or it is significant and as large as the threshold allows; null when it is not one. */
  regression: Schema.NullOr(Schema.Literal("drop_over_threshold", "significant_drop"))
})
export type RegressionCheck = typeof RegressionCheck.Type

/** Comparable runs a run is compared with: the newest of the same eval set ref and build fingerprint. */
export const TRAILING_RUNS = 5
/** The significance a drop within the threshold needs to count, when the threshold is within reach of what the run shows. */
export const SIGNIFICANCE = 0.01
const NULL_DRAWS = 4000
// Shrinks a task's own failure rate toward its peers': with a handful of attempts, a task never seen failing is not a task that cannot fail.
const PRIOR_ATTEMPTS = 10

const points = (correct: number, attempts: number) => (attempts === 0 ? 0 : (100 * correct) / attempts)
const accuracyOf = (run: ComparedRun) =>
  points(
    run.tasks.reduce((sum, task) => sum + task.correct, 0),
    run.tasks.reduce((sum, task) => sum + task.attempts, 0)
  )
const passed = (correct: number, attempts: number) => attempts > 0 && correct * 2 > attempts

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** P(X ≥ k) for X ~ Binomial(n, ½). */
const halfBinomialTail = (k: number, n: number) => {
  let tail = 0
  let term = 0.5 ** n
  for (let i = 0; i <= n; i += 1) {
    if (i >= k) tail += term
    term = (term * (n - i)) / (i + 1)
  }
  return tail
}

/** Exact two-sided McNemar p for `broke` against `fixed` discordant pairs. */
export const mcnemarP = (broke: number, fixed: number) => (broke + fixed === 0 ? 1 : Math.min(1, 2 * halfBinomialTail(Math.max(broke, fixed), broke + fixed)))

/** A small seeded generator (mulberry32): the same run checked again draws the same numbers. */
const seeded = (seed: string) => {
  let state = 0
  for (let i = 0; i < seed.length; i += 1) state = Math.imul(state ^ seed.charCodeAt(i), 2654435761) >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface StableTask {
  readonly attempts: number
  readonly failed: number
  /** What the comparable runs say of its chance to fail an attempt: a Beta(failing, passing) belief, its mean the rate. */
  readonly failing: number
  readonly passing: number
  readonly rate: number
}

/**
 * How strongly the tasks that passed in the baseline now look broken: for each, the log-likelihood
 * of its failures now under "it broke" (failing as often as stable tasks pass) against "it is as it
 * was" (its own rate), only where the first is likelier. Many failures of one stable task weigh more
 * than one failure each of many flaky ones.
 */
const brokenScore = (tasks: ReadonlyArray<StableTask>, broken: number, failures: (task: StableTask, index: number) => number) => {
  let score = 0
  tasks.forEach((task, index) => {
    const failed = failures(task, index)
    if (task.rate >= broken) return
    const evidence = failed * Math.log(broken / task.rate) + (task.attempts - failed) * Math.log((1 - broken) / (1 - task.rate))
    if (evidence > 0) score += evidence
  })
  return score
}

/**
 * Compares a finished run with the trailing comparable runs (newest first, at most TRAILING_RUNS
 * used, those with a graded attempt; none, or none graded in the run → no check). The drop is the specification's: the median accuracy of those runs minus
 * this run's. A drop over `thresholdPoints` is a regression as the specification says. A single run
 * is noisy (a task that passes nine times in ten fails now and then), so a drop within the threshold
 * is one too when it is significant (`evidence_p` < SIGNIFICANCE: that stable tasks failed this
 * much by chance) and the threshold is within its upper 95 % bound: tasks broke, and by as much as
 * the threshold asks for. The paired McNemar p and the flaky tasks are reported either way.
 */
export const checkRegression = (current: ComparedRun, trailingRuns: ReadonlyArray<ComparedRun>, thresholdPoints: number): RegressionCheck | null => {
  // A run with no graded attempt scored nothing: it is neither checked nor anyone's baseline.
  const graded = (run: ComparedRun) => run.tasks.some((task) => task.attempts > 0)
  const trailing = trailingRuns.filter(graded).slice(0, TRAILING_RUNS)
  if (trailing.length === 0 || !graded(current)) return null
  const baseline = median(trailing.map(accuracyOf))
  const accuracy = accuracyOf(current)
  const drop = baseline - accuracy

  const history = new Map<string, { attempts: number; correct: number; verdicts: Set<boolean> }>()
  for (const run of trailing) {
    for (const task of run.tasks) {
      const seen = history.get(task.task_id) ?? { attempts: 0, correct: 0, verdicts: new Set<boolean>() }
      seen.attempts += task.attempts
      seen.correct += task.correct
      if (task.attempts > 0) seen.verdicts.add(passed(task.correct, task.attempts))
      history.set(task.task_id, seen)
    }
  }
  const flaky = [...history].filter(([, seen]) => seen.verdicts.size > 1).map(([taskId]) => taskId)

  const flipped: Array<typeof FlippedTask.Type> = []
  const stableNow: Array<{ readonly attempts: number; readonly failed: number; readonly pastAttempts: number; readonly pastFailed: number }> = []
  for (const task of current.tasks) {
    const seen = history.get(task.task_id)
    if (seen === undefined || seen.attempts === 0 || task.attempts === 0) continue
    const before = passed(seen.correct, seen.attempts)
    const now = passed(task.correct, task.attempts)
    if (before && !now) flipped.push({ task_id: task.task_id, change: "broke" })
    if (!before && now) flipped.push({ task_id: task.task_id, change: "fixed" })
    if (before) stableNow.push({ attempts: task.attempts, failed: task.attempts - task.correct, pastAttempts: seen.attempts, pastFailed: seen.attempts - seen.correct })
  }
  const broke = flipped.filter((task) => task.change === "broke").length
  const mcnemar_p = mcnemarP(broke, flipped.length - broke)

  // Peers' failure rate: how often tasks that pass in the baseline fail an attempt there.
  const pastAttempts = stableNow.reduce((sum, task) => sum + task.pastAttempts, 0)
  const peerRate = Math.min(0.45, Math.max(0.01, (stableNow.reduce((sum, task) => sum + task.pastFailed, 0) + 1) / (pastAttempts + 2)))
  const stable: Array<StableTask> = stableNow.map((task) => {
    const failing = task.pastFailed + PRIOR_ATTEMPTS * peerRate
    const passing = task.pastAttempts - task.pastFailed + PRIOR_ATTEMPTS * (1 - peerRate)
    return { attempts: task.attempts, failed: task.failed, failing, passing, rate: failing / (failing + passing) }
  })
  const brokenRate = 1 - peerRate
  const observed = brokenScore(stable, brokenRate, (task) => task.failed)
  const random = seeded(current.run_id)
  let asLarge = 0
  for (let draw = 0; draw < NULL_DRAWS && observed > 0; draw += 1) {
    const score = brokenScore(stable, brokenRate, (task) => {
      // Drawn as the belief predicts (a Pólya urn): a rate known from few attempts may be higher than its mean.
      let failed = 0
      for (let attempt = 0; attempt < task.attempts; attempt += 1) if (random() < (task.failing + failed) / (task.failing + task.passing + attempt)) failed += 1
      return failed
    })
    if (score >= observed) asLarge += 1
  }
  const evidence_p = observed > 0 ? (asLarge + 1) / (NULL_DRAWS + 1) : 1

  const comparedTasks = current.tasks.filter((task) => task.attempts > 0 && history.has(task.task_id)).length
  const tasksDrop = comparedTasks === 0 ? 0 : (100 * (broke - (flipped.length - broke))) / comparedTasks
  const regression =
    drop > thresholdPoints ? "drop_over_threshold" : drop > 0 && evidence_p < SIGNIFICANCE && tasksDrop >= thresholdPoints / 2 ? "significant_drop" : null

  return { baseline_run_ids: trailing.map((run) => run.run_id), baseline, accuracy, drop, flipped, mcnemar_p, flaky, evidence_p, regression }
}
