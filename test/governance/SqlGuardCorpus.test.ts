import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { DB_TYPES } from "../../src/domain/Connection"
import { SqlGuard } from "../../src/governance/sqlguard/SqlGuard"
import { DIALECT_ATTACKS, GENERIC_ATTACKS } from "./corpus/Attacks"
import { READS } from "./corpus/Reads"

const guard = await Effect.runPromise(Effect.provide(SqlGuard, SqlGuard.Default))

describe("the read-only check on the corpus", () => {
  it("has at least 300 reads and 300 attacks across the eleven dialects", () => {
    const reads = DB_TYPES.reduce((n, d) => n + READS[d].length, 0)
    const attacks = DB_TYPES.reduce((n, d) => n + GENERIC_ATTACKS.length + DIALECT_ATTACKS[d].length, 0)
    expect(reads).toBeGreaterThanOrEqual(300)
    expect(attacks).toBeGreaterThanOrEqual(300)
  })

  for (const dbType of DB_TYPES) {
    it(`${dbType}: lets every read through and refuses every attack`, () => {
      const wrongful = READS[dbType].flatMap((sql) => {
        const result = guard.check(sql, dbType)
        return Either.isLeft(result) ? [`${sql}  →  ${result.left.reason}`] : []
      })
      const missed = [...GENERIC_ATTACKS, ...DIALECT_ATTACKS[dbType]].filter((sql) => Either.isRight(guard.check(sql, dbType)))
      expect(wrongful, "reads refused").toEqual([])
      expect(missed, "attacks let through").toEqual([])
    })
  }
})
