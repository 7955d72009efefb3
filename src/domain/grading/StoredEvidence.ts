import { Schema } from "effect"
import { EvalTask, ToleranceSpec } from "../EvalSet"
import { gradeTask } from "./Grade"

const Cell = Schema.Union(Schema.String, Schema.Number, Schema.Boolean, Schema.Null)
const Table = Schema.Struct({ columns: Schema.Array(Schema.String), rows: Schema.Array(Schema.Array(Cell)) })
const ModelCapture = Schema.Struct({
  exists: Schema.Boolean,
  row_count: Schema.NullOr(Schema.Number),
  columns: Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String })),
  grains: Schema.Record({ key: Schema.String, value: Schema.Struct({ duplicates: Schema.Number, null_keys: Schema.Number }) }),
  sums: Schema.Record({ key: Schema.String, value: Schema.NullOr(Schema.Number) })
})

/**
 * A task's evidence as the grading phase stores it (`evidence.json`): the task as the set defined
 * it, the set's default tolerance, and everything its checks read. Grading reads this and nothing
 * else, so a regrade of a finished run gives the verdicts the run gave.
 */
export const StoredEvidence = Schema.Struct({
  task: EvalTask,
  defaults: Schema.Struct({ tolerance: Schema.optionalWith(ToleranceSpec, { exact: true }) }),
  evidence: Schema.Struct({
    question: Schema.String,
    answer: Schema.NullOr(Schema.String),
    last_result: Schema.NullOr(Table),
    gold_tables: Schema.Record({ key: Schema.String, value: Table }),
    models: Schema.Record({ key: Schema.String, value: ModelCapture }),
    failure: Schema.NullOr(Schema.String)
  })
})
export type StoredEvidence = typeof StoredEvidence.Type

export const gradeStored = (stored: StoredEvidence) => gradeTask(stored.task, stored.evidence, stored.defaults)
