import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ConnectionInput } from "../../src/domain/Connection"
import { withPool } from "../support/Connectors"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"
import { ed25519, KEY_PASSPHRASE, SshServer, TUNNEL_PASSWORD, userKey } from "../support/SshServer"

const skip = !(await postgresAvailable())

const waitFor = async (check: () => boolean, what: string, ms = 5_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe("connections through an SSH tunnel", () => {
  let gateway: Gateway
  let admin: string
  let database: TestDatabase
  let ssh: SshServer
  let sshPort: number

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query("create table orders (id int primary key)")
    ssh = new SshServer()
    sshPort = await ssh.listen()
    gateway = await startApp({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000" } })
    admin = await localKey(gateway)
  })
  afterAll(async () => {
    await gateway?.stop()
    await ssh?.close()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: admin, ...options })
  const tunnelled = (name: string, tunnel: Record<string, unknown>) => ({
    name,
    db_type: "postgresql",
    // The database is named as the SSH server sees it; the gateway never dials it directly.
    host: "127.0.0.1",
    port: 5432,
    database: database.name,
    username: "root",
    ssh_tunnel: { host: "127.0.0.1", port: sshPort, username: "tunnel", ...tunnel }
  })

  it.skipIf(skip)("password auth: test and diagnose go through the tunnel, the host key is pinned on first use, secrets stay hidden", async () => {
    expect((await api("/api/connections", { body: tunnelled("via_password", { password: TUNNEL_PASSWORD }) })).status).toBe(201)
    const before = ssh.forwarded
    const tested = await api("/api/connections/via_password/test", { method: "POST" })
    expect(tested.json, tested.text).toMatchObject({ ok: true })
    expect(ssh.forwarded).toBeGreaterThan(before)

    const read = await api("/api/connections/via_password")
    expect(read.json.ssh_tunnel).toEqual({
      host: "127.0.0.1",
      port: sshPort,
      username: "tunnel",
      private_key_set: false,
      passphrase_set: false,
      password_set: true,
      host_key_fingerprint: ssh.fingerprint
    })

    const diagnosed = await api("/api/connections/via_password/diagnose", { method: "POST" })
    expect(diagnosed.json.ok, diagnosed.text).toBe(true)
    expect(diagnosed.json.steps.map((s: { step: string }) => s.step)).toEqual(["dns", "tcp", "ssh", "tls", "auth", "privileges"])
    expect(diagnosed.json.steps[1].detail).toContain(`SSH server: port ${sshPort}`)
    for (const body of [tested.text, read.text, diagnosed.text, gateway.logs()]) expect(body).not.toContain(TUNNEL_PASSWORD)
  })

  it.skipIf(skip)("key auth with a passphrase works; a wrong password, key or passphrase fails at the ssh step with no secret echoed", async () => {
    const withKey = tunnelled("via_key", { private_key: userKey.private, passphrase: KEY_PASSPHRASE })
    expect((await api("/api/connections", { body: withKey })).status).toBe(201)
    expect((await api("/api/connections/via_key/test", { method: "POST" })).json).toMatchObject({ ok: true })

    const attempts = [
      { password: "wrong-tunnel-pw" },
      { private_key: userKey.private, passphrase: "wrong-passphrase" },
      { private_key: ed25519().private }
    ]
    for (const tunnel of attempts) {
      const checked = await api("/api/connections/test-credentials", { body: tunnelled("probe", tunnel) })
      expect(checked.status).toBe(200)
      expect(checked.json).toMatchObject({ ok: false, step: "ssh" })
      for (const secret of Object.values(tunnel)) expect(checked.text).not.toContain(secret)
    }
    const refused = await api("/api/connections/test-credentials", { body: tunnelled("probe", { password: "wrong-tunnel-pw" }) })
    expect(refused.json.error).toMatch(/refused the login/)
    const unreachable = await api("/api/connections/test-credentials", {
      body: { ...tunnelled("probe", { password: TUNNEL_PASSWORD }), ssh_tunnel: { host: "127.0.0.1", port: 1, username: "tunnel", password: "x-pw" } }
    })
    expect(unreachable.json).toMatchObject({ ok: false, step: "ssh" })
    expect((await api("/api/health")).status).not.toBe(500)
  })

  it.skipIf(skip)("the SSH connection is re-opened after it drops, and closed when the connection is deleted", async () => {
    expect((await api("/api/connections/via_password/test", { method: "POST" })).json).toMatchObject({ ok: true })
    ssh.dropAll()
    await waitFor(() => ssh.sessions.size === 0, "the drop")
    // The pool's sessions died with the tunnel; the next check gets a new SSH connection and new sessions.
    const afterDrop = await api("/api/connections/via_password/test", { method: "POST" })
    expect(afterDrop.json, afterDrop.text).toMatchObject({ ok: true })
    expect(ssh.sessions.size).toBeGreaterThan(0)

    await api("/api/connections/via_key/test", { method: "POST" })
    const open = ssh.sessions.size
    expect((await api("/api/connections/via_key", { method: "DELETE" })).status).toBe(204)
    await waitFor(() => ssh.sessions.size === open - 1, "the deleted connection's tunnel to close")
  })

  it.skipIf(skip)("a tunnelled pool offers no plain queryNow: its failures are explained by the tunnel's, which only the effect does (issue 28)", async () => {
    const connection = tunnelled("plain_lane", { password: TUNNEL_PASSWORD }) as unknown as ConnectionInput
    const plain = await withPool(connection, (pool) => Effect.succeed({ query: typeof pool.query, queryNow: typeof pool.queryNow }))
    expect(plain).toEqual({ query: "function", queryNow: "undefined" })
  })

  it.skipIf(skip)("a changed host key is refused until the new fingerprint is pinned on purpose", async () => {
    const pinned = ssh.fingerprint
    await ssh.close()
    ssh = new SshServer()
    await ssh.listen(sshPort)
    expect(ssh.fingerprint).not.toBe(pinned)

    const final = await api("/api/connections/via_password/test", { method: "POST" })
    expect(final.json).toMatchObject({ ok: false, step: "ssh" })
    expect(final.json.error).toContain("host key changed")
    expect(final.json.error).toContain(ssh.fingerprint)
    expect(ssh.forwarded).toBe(0)

    // Saving the connection unchanged does not trust the new key; naming it does.
    const same = tunnelled("via_password", {})
    await api("/api/connections/via_password", { method: "PUT", body: same })
    expect((await api("/api/connections/via_password/test", { method: "POST" })).json).toMatchObject({ ok: false, step: "ssh" })
    const repinned = tunnelled("via_password", { host_key_fingerprint: ssh.fingerprint })
    expect((await api("/api/connections/via_password", { method: "PUT", body: repinned })).status).toBe(200)
    expect((await api("/api/connections/via_password/test", { method: "POST" })).json).toMatchObject({ ok: true })
    expect((await api("/api/connections/via_password")).json.ssh_tunnel.host_key_fingerprint).toBe(ssh.fingerprint)

    const badPin = await api("/api/connections", { body: tunnelled("bad_pin", { password: "x", host_key_fingerprint: "md5:aa" }) })
    expect(badPin.status).toBe(400)
    expect(badPin.json.message).toContain("ssh_tunnel.host_key_fingerprint")
  })
})
