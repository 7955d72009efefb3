import { Either, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { parse as parseYaml } from "yaml"
import { EvalSetManifest } from "../../src/domain/EvalSet"
import { issueMessages } from "../../src/domain/ParseIssues"

const decode = (value: unknown) => {
  const result = Schema.decodeUnknownEither(EvalSetManifest, { errors: "all" })(value)
  return Either.isRight(result) ? { ok: result.right } : { issues: issueMessages(result.left).join("\n") }
}
const example = () => parseYaml(fs.readFileSync(path.join(import.meta.dirname, "../../docs/eval-set-example/eval.yaml"), "utf8"))
const task = { id: "t1", class: "read", prompt: "How many?", checks: [{ name: "n", type: "number", gold: 1 }] }

describe("eval set manifests", () => {
  it("reads the documented example", () => {
    const { ok } = decode(example())
    expect(ok?.tasks.map((t) => `${t.id}:${t.class}:${t.checks.length}`)).toEqual(["revenue_2018:read:1", "top_customers:read:1", "orders_daily:write:5"])
  })

  it("refuses a bad manifest with a message that says what is wrong", () => {
    expect(decode({ name: "x", tasks: [] }).issues).toMatch(/at least one task/)
    expect(decode({ name: "x y", tasks: [task] }).issues).toMatch(/name must be 1-64/)
    expect(decode({ name: "x", tasks: [task, task] }).issues).toMatch(/two tasks share the id t1/)
    expect(decode({ name: "x", tasks: [{ ...task, setup: "../outside.sh" }] }).issues).toMatch(/a path inside the eval set/)
    expect(decode({ name: "x", tasks: [{ ...task, setup: "/etc/passwd" }] }).issues).toMatch(/a path inside the eval set/)
    expect(decode({ name: "x", tasks: [{ ...task, setup: "a/./b" }] }).issues).toMatch(/a path inside the eval set/)
    expect(decode({ name: "x", tasks: [{ ...task, image: "evil:latest" }] }).issues).toMatch(/image/)
    expect(decode({ name: "x", tasks: [{ ...task, checks: [{ name: "e", type: "exists", model: "m" }] }] }).issues).toMatch(/structural checks .* grade write tasks/)
    expect(decode({ name: "x", tasks: [{ ...task, class: "write" }] }).issues).toMatch(/a write task is graded by structural checks/)
    expect(decode({ name: "x", tasks: [{ ...task, checks: [{ name: "t", type: "table" }] }] }).issues).toMatch(/exactly one of gold, gold_csv, gold_sql/)
    expect(decode({ name: "x", tasks: [{ ...task, checks: [{ name: "n", type: "number", gold: 1 }, { name: "n", type: "number", gold: 2 }] }] }).issues).toMatch(/two checks share a name/)
    expect(decode({ name: "x", build_fingerprint: "abc", tasks: [task] }).issues).toMatch(/sha256:<64 hex>/)
    // A pass mark of 0 would pass a check that scored nothing (attack 35).
    expect(decode({ name: "x", tasks: [{ ...task, checks: [{ name: "n", type: "number", gold: 1, pass_mark: 0 }] }] }).issues).toMatch(/pass_mark/)
  })
})
