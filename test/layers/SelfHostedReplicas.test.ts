import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type GatewayProcess, localKey, startGateway } from "../support/Gateway"
import { request } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const hasPostgres = await postgresAvailable()
const ENV_CONNECTIONS = ["warehouse", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]

describe.skipIf(!hasPostgres)("self-hosted replicas on one PostgreSQL, each with its own data dir", () => {
  let database: TestDatabase
  const gateways: Array<GatewayProcess> = []

  beforeAll(async () => {
    database = await createTestDatabase()
  })
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.kill()))
    await database?.drop()
  })

  it("three started together all come up, and each one's local key opens every replica", async () => {
    // Every replica mirrors the same SP_CONNECTION_* variables at start; a dozen widen the window in which they race.
    const mirrored = Object.fromEntries(ENV_CONNECTIONS.map((name) => [`SP_CONNECTION_${name.toUpperCase()}`, `${database.url}?sslmode=disable`]))
    const env = { SP_ENCRYPTION_KEY: "replicas-share-this-key", SP_ENCRYPTION_SALT: "replicas-share-this-salt", ...mirrored }
    const started = await Promise.allSettled([1, 2, 3].map(() => startGateway({ databaseUrl: database.url, env })))
    for (const result of started) if (result.status === "fulfilled") gateways.push(result.value)
    expect(started.map((r) => (r.status === "rejected" ? String(r.reason).slice(0, 300) : "healthy"))).toEqual(["healthy", "healthy", "healthy"])

    const keys = await Promise.all(gateways.map(localKey))
    expect(new Set(keys).size).toBe(3)
    for (const gateway of gateways) {
      for (const key of keys) expect((await request(gateway.url, "/api/keys", { key })).status).toBe(200)
    }
    const names = (await request(gateways[0]!.url, "/api/keys", { key: keys[0]! })).json.items.map((k: { name: string }) => k.name)
    expect(names.filter((name: string) => name.startsWith("local"))).toHaveLength(3)
    expect(names).toContain("local")
    const connections = await request(gateways[1]!.url, "/api/connections", { key: keys[2]! })
    expect(connections.json.items.map((c: { name: string }) => c.name).sort()).toEqual([...ENV_CONNECTIONS].sort())
  })
})
