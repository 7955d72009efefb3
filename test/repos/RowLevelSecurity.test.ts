import { afterAll, describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer } from "effect"
import { AppConfig } from "../../layers/AppConfig"
import { StoreLive } from "../../layers/Store"
import { KeyId, OrgId, UserId } from "../../src/domain/Ids"
import { ApiKeysRepo } from "../../src/repos/ApiKeysRepo"
import { AuditRepo } from "../../src/repos/AuditRepo"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { SettingsRepo } from "../../src/repos/SettingsRepo"
import { tenantScope } from "../../src/repos/Tenant"
import { tempDataDir } from "../support/Gateway"
import { createTestDatabase, postgresAvailable } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const database = hasPostgres ? await createTestDatabase() : undefined
afterAll(() => database?.drop())

const storeOn = (env: Record<string, string>) =>
  Layer.mergeAll(ApiKeysRepo.Default, AuditRepo.Default, OrgsRepo.Default, SettingsRepo.Default).pipe(
    Layer.provideMerge(StoreLive),
    Layer.provide(AppConfig.Default),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )

const A = OrgId.make("org_a")
const B = OrgId.make("org_b")

const seed = Effect.gen(function* () {
  const orgs = yield* OrgsRepo
  const keys = yield* ApiKeysRepo
  const audit = yield* AuditRepo
  const settings = yield* SettingsRepo
  for (const org of [A, B]) {
    const user = UserId.make(`user_${org}`)
    yield* orgs.ensureMember({ orgId: org, orgName: org, userId: user, role: "admin" })
    yield* keys.insert({
      id: KeyId.make(`key_${org}`),
      org_id: org,
      user_id: user,
      name: `key of ${org}`,
      prefix: "sp_00000000",
      scopes: ["read"],
      expires_at: null,
      connections: null,
      branch_project: null,
      branch_name: null,
      knowledge_overlay: null,
      key_hash: (org === A ? "a" : "b").repeat(64)
    })
    yield* settings.put(org, { default_row_limit: org === A ? 1 : 2 })
  }
  yield* audit.insertBatch(
    [A, B, null].map((org) => ({
      timestamp: 1,
      org_id: org,
      principal: null,
      key_id: `key_${org}`,
      user_id: null,
      event_type: "api",
      method: "GET",
      route: "/api/plan",
      status: 200,
      connection: null,
      sql: null,
      outcome: "success" as const,
      block_reason: "seeded",
      rows: null,
      duration_ms: 1,
      client_ip: null,
      user_agent: null,
      request_id: `req_${org}`,
      details: null
    }))
  )
  // Into the rollups, as the fold loop does.
  yield* audit.fold()
})

const TENANT_TABLES = [
  ["organizations", "id"],
  ["memberships", "org_id"],
  ["api_keys", "org_id"],
  ["gateway_audit_logs", "org_id"],
  ["gateway_audit_hourly", "org_id"],
  ["gateway_audit_hourly_keys", "org_id"],
  ["gateway_audit_hourly_block_reasons", "org_id"],
  ["org_settings", "org_id"]
] as const

const stores = [
  { name: "embedded", env: { SP_DATA_DIR: tempDataDir() }, skip: false },
  { name: "postgresql", env: { DATABASE_URL: database?.url ?? "" }, skip: !hasPostgres }
]

for (const store of stores) {
  describe.skipIf(store.skip)(`row-level security on the ${store.name} store`, () => {
    layer(storeOn(store.env), { timeout: 60_000, excludeTestServices: true })((it) => {
      it.effect("a query with no org filter sees only the org set for the transaction", () =>
        Effect.gen(function* () {
          yield* seed
          const sql = yield* SqlClient.SqlClient
          const asOrg = tenantScope(sql)
          for (const [table, column] of TENANT_TABLES) {
            const everything = yield* sql<{ org: string | null }>`select ${sql(column)} as org from ${sql(table)}`
            expect(new Set(everything.map((r) => r.org)), `${table} as owner`).toEqual(
              new Set(table === "gateway_audit_logs" ? [A, B, null] : [A, B])
            )
            const seenByA = yield* asOrg(A)(sql<{ org: string }>`select ${sql(column)} as org from ${sql(table)}`)
            expect(seenByA.map((r) => r.org), table).toEqual([A])
            const seenByStranger = yield* asOrg(OrgId.make("org_zzz"))(sql`select * from ${sql(table)}`)
            expect(seenByStranger, table).toEqual([])
          }
        })
      )

      it.effect("a tenant cannot write another org's rows or read system tables", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const asA = tenantScope(sql)(A)
          const foreignInsert = yield* asA(
            sql`insert into api_keys (id, org_id, user_id, name, key_hash, prefix, scopes)
                values ('key_x', ${B}, ${`user_${B}`}, 'sneaky', ${"c".repeat(64)}, 'sp_x', ${["admin"]})`
          ).pipe(Effect.flip)
          expect(foreignInsert._tag).toBe("SqlError")
          const updated = yield* asA(sql`update api_keys set name = 'pwned' where org_id = ${B} returning id`)
          expect(updated).toEqual([])
          const deleted = yield* asA(sql`delete from gateway_audit_logs returning id`).pipe(Effect.flip)
          expect(deleted._tag).toBe("SqlError")
          const leases = yield* asA(sql`select * from leases`).pipe(Effect.flip)
          expect(leases._tag).toBe("SqlError")
          const bKey = yield* sql<{ name: string }>`select name from api_keys where org_id = ${B}`
          expect(bKey).toEqual([{ name: `key of ${B}` }])
          const role = yield* sql<{ role: string }>`select current_user as role`
          expect(role[0]!.role).not.toBe("sluice_tenant")
        })
      )
    })
  })
}
