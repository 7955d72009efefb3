import { describe, expect, it } from "vitest"
import { type AccuracyRecord, changesBetween, regressionEmail, type RunCircumstances, taskOutcome } from "../../src/domain/EvalAccuracy"

const before: RunCircumstances = { knowledge: ["k_a@1", "k_b@2", "k_c@1"], model: null, preamble_sha256: "aa", connection_name: "shop", max_tasks: 50, attempts: 1 }

describe("what changed between two runs", () => {
  it("nothing, when nothing did", () => {
    expect(changesBetween(before, { ...before, knowledge: ["k_c@1", "k_a@1", "k_b@2"] })).toEqual([])
  })

  it("each entry added, edited and removed, and each setting that differs", () => {
    const now: RunCircumstances = { knowledge: ["k_a@1", "k_b@3", "k_d@1"], model: "claude-opus-4-1", preamble_sha256: "bb", connection_name: "warehouse", max_tasks: 20, attempts: 3 }
    expect(changesBetween(before, now)).toEqual([
      { kind: "knowledge_edited", detail: "k_b (version 2 → 3)" },
      { kind: "knowledge_added", detail: "k_d" },
      { kind: "knowledge_removed", detail: "k_c" },
      { kind: "model", detail: "the default → claude-opus-4-1" },
      { kind: "prompt_preamble", detail: "the prompt preamble changed" },
      { kind: "connection", detail: "shop → warehouse" },
      { kind: "max_tasks", detail: "50 → 20" },
      { kind: "attempts", detail: "1 → 3 per task" }
    ])
  })
})

describe("a task's outcome from its attempts", () => {
  it("is CORRECT when most graded attempts were, else the verdict most of the others had (the worse of equals); UNGRADED attempts do not count", () => {
    expect(taskOutcome("t", ["CORRECT", "WRONG", "CORRECT"])).toEqual({ task_id: "t", attempts: 3, correct: 2, verdict: "CORRECT" })
    expect(taskOutcome("t", ["CORRECT", "WRONG"])).toEqual({ task_id: "t", attempts: 2, correct: 1, verdict: "WRONG" })
    expect(taskOutcome("t", ["PARTIAL", "WRONG", "CORRECT", "PARTIAL"])).toEqual({ task_id: "t", attempts: 4, correct: 1, verdict: "PARTIAL" })
    expect(taskOutcome("t", ["ERROR", "WRONG", "CORRECT"])).toEqual({ task_id: "t", attempts: 3, correct: 1, verdict: "ERROR" })
    expect(taskOutcome("t", ["UNGRADED", "CORRECT"])).toEqual({ task_id: "t", attempts: 1, correct: 1, verdict: "CORRECT" })
    expect(taskOutcome("t", ["UNGRADED", null])).toEqual({ task_id: "t", attempts: 0, correct: 0, verdict: "UNGRADED" })
    expect(taskOutcome("t", [null])).toEqual({ task_id: "t", attempts: 0, correct: 0, verdict: null })
  })
})

describe("a regression's email", () => {
  const record = (changes: AccuracyRecord["changes"], comparison: Partial<NonNullable<AccuracyRecord["comparison"]>> | null = {}): AccuracyRecord => ({
    run_id: "evr_now",
    finished_at: new Date(0),
    eval_set_ref: "shop@abc",
    build_fingerprint: "sha256:f",
    task_set: "abc",
    trigger: "api",
    accuracy: 0.6,
    coverage: null,
    knowledge: [],
    model: null,
    preamble_sha256: "aa",
    connection_name: "shop",
    max_tasks: 50,
    attempts: 1,
    tasks: [
      { task_id: "a", attempts: 1, correct: 1, verdict: "CORRECT" },
      { task_id: "b", attempts: 1, correct: 0, verdict: "WRONG" },
      { task_id: "c", attempts: 1, correct: 0, verdict: "ERROR" }
    ],
    comparison:
      comparison === null
        ? null
        : {
            baseline_run_ids: ["evr_before", "evr_older"],
            baseline: 90,
            accuracy: 60,
            drop: 30,
            flipped: [{ task_id: "b", change: "broke" }, { task_id: "c", change: "broke" }],
            mcnemar_p: 0.5,
            flaky: ["c"],
            evidence_p: 0.002,
            regression: "drop_over_threshold",
            ...comparison
          },
    changes,
    regressed: comparison !== null && comparison.regression !== null
  })

  it("names the one knowledge entry added as the cause when nothing else changed", () => {
    const email = regressionEmail(record([{ kind: "knowledge_added", detail: "kn_1" }]))!
    expect(email.subject).toBe("Evaluation regression: shop@abc dropped 30 points")
    expect(email.text).toContain("The knowledge entry kn_1 caused this regression: it was added after the last comparable run (evr_before), and nothing else changed.")
    expect(email.text).toContain("Tasks whose verdict was not CORRECT:\n  - b: WRONG\n  - c: ERROR")
    expect(email.text).toContain("Flaky tasks (their verdict already changed between earlier comparable runs): c.")
  })

  it("says the regression coincided with the changes, listed, when several things changed (or one that is not an entry added)", () => {
    const several = regressionEmail(record([{ kind: "knowledge_added", detail: "kn_1" }, { kind: "knowledge_removed", detail: "kn_2" }, { kind: "model", detail: "a → b" }]))!
    expect(several.text).not.toContain("caused")
    expect(several.text).toContain(
      "The regression coincided with these changes since the last comparable run (evr_before):\n  - knowledge entry added: kn_1\n  - knowledge entry removed: kn_2\n  - model: a → b"
    )
    const preamble = regressionEmail(record([{ kind: "prompt_preamble", detail: "the prompt preamble changed" }]))!
    expect(preamble.text).toContain("coincided with these changes since the last comparable run (evr_before):\n  - prompt preamble: the prompt preamble changed")
    expect(regressionEmail(record([]))!.text).toContain("Nothing changed since the last comparable run (evr_before)")
  })

  it("is not sent for a run that did not regress or had nothing to be compared with (no fingerprint, no comparable run)", () => {
    expect(regressionEmail(record([], { regression: null }))).toBeNull()
    expect(regressionEmail(record([], null))).toBeNull()
  })
})
