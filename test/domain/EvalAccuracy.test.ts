import { describe, expect, it } from "vitest"
import { changesBetween, type RunCircumstances } from "../../src/domain/EvalAccuracy"

const before: RunCircumstances = { knowledge: ["k_a@1", "k_b@2", "k_c@1"], model: null, preamble_sha256: "aa", connection_name: "shop", max_tasks: 50 }

describe("what changed between two runs", () => {
  it("nothing, when nothing did", () => {
    expect(changesBetween(before, { ...before, knowledge: ["k_c@1", "k_a@1", "k_b@2"] })).toEqual([])
  })

  it("each entry added, edited and removed, and each setting that differs", () => {
    const now: RunCircumstances = { knowledge: ["k_a@1", "k_b@3", "k_d@1"], model: "claude-opus-4-1", preamble_sha256: "bb", connection_name: "warehouse", max_tasks: 20 }
    expect(changesBetween(before, now)).toEqual([
      { kind: "knowledge_edited", detail: "k_b (version 2 → 3)" },
      { kind: "knowledge_added", detail: "k_d" },
      { kind: "knowledge_removed", detail: "k_c" },
      { kind: "model", detail: "the default → claude-opus-4-1" },
      { kind: "prompt_preamble", detail: "the prompt preamble changed" },
      { kind: "connection", detail: "shop → warehouse" },
      { kind: "max_tasks", detail: "50 → 20" }
    ])
  })
})
