import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import type * as http from "node:http"
import * as net from "node:net"
import { listenFake } from "./FakeServer"
import { queryDatabase, TEST_PG_URL } from "../support/Servers"

interface FakeBranch {
  readonly id: string
  readonly name: string
  readonly parentId: string | null
  /** The database on the test PostgreSQL that holds this branch's copy of the project's database. */
  readonly physical: string
  ready: boolean
  endpoint: net.Server | null
  port: number
  readonly sockets: Set<net.Socket>
}

interface FakeOperation {
  readonly id: string
  status: "running" | "finished" | "failed"
}

/** A request the fake received, its API key left out. */
export interface NeonRequest {
  readonly method: string
  readonly path: string
  readonly body: unknown
}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

const readBody = async (req: http.IncomingMessage) => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
}

const pgUrl = new URL(TEST_PG_URL)
const pgHost = pgUrl.hostname
const pgPort = Number(pgUrl.port || 5432)

const run = (command: string, args: ReadonlyArray<string>, stdin?: NodeJS.ReadableStream) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { stdio: [stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"] })
    if (stdin !== undefined) stdin.pipe(child.stdin!)
    let errors = ""
    child.stderr!.on("data", (d) => (errors += d))
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${errors}`))))
  })

/** A point-in-time copy of `from` as `to` that leaves `from`'s sessions alone, as a copy-on-write branch does. */
const copyDatabase = async (from: string, to: string) => {
  await queryDatabase("postgres", `create database "${to}"`)
  const dump = spawn("pg_dump", ["--format=custom", "--host", pgHost, "--port", String(pgPort), "--username", pgUrl.username || "root", from], { stdio: ["ignore", "pipe", "inherit"] })
  await run("pg_restore", ["--host", pgHost, "--port", String(pgPort), "--username", pgUrl.username || "root", "--dbname", to, "--exit-on-error"], dump.stdout)
}

/** The startup message's `database` parameter, rewritten: a branch's compute serves the project's database name from its own copy. */
const rewriteStartup = (message: Buffer, database: string, physical: string): Buffer | null => {
  const parts = message.subarray(8).toString("utf8").split("\0")
  const pairs: Array<string> = []
  for (let i = 0; i + 1 < parts.length && parts[i] !== ""; i += 2) {
    const [key, value] = [parts[i]!, parts[i + 1]!]
    if (key === "database" && value !== database) return null
    pairs.push(key, key === "database" ? physical : value)
  }
  const body = Buffer.from(`${pairs.join("\0")}\0\0`, "utf8")
  const head = Buffer.alloc(8)
  head.writeInt32BE(8 + body.length, 0)
  message.copy(head, 4, 4, 8)
  return Buffer.concat([head, body])
}

/**
 * A hosted branching service that speaks the part of Neon's REST API (v2) the gateway uses: create
 * a branch with a read-write endpoint (an operation that runs a while), poll its operation, list
 * branches by name, delete one. Each branch's compute is a TCP endpoint of its own on 127.0.0.1
 * that serves the project's database name from a copy on the test PostgreSQL (the startup message
 * is rewritten), so a client reaches a branch exactly as it would the service's. Bearer API key only.
 */
export const startNeonFake = async (options: {
  readonly apiKey: string
  readonly projectId: string
  readonly database: string
  /** Every branch's making ends "failed" (its deleting does not). */
  readonly failOperations?: boolean
  /** A hostile or broken service: the endpoint it answers with, whatever branch it made. */
  readonly answerEndpoint?: { readonly host: string; readonly port: number }
}) => {
  let deleteStatus: number | null = null
  const branches = new Map<string, FakeBranch>()
  const operations = new Map<string, FakeOperation>()
  const requests: Array<NeonRequest> = []
  const rootId = `br-root-${randomBytes(4).toString("hex")}`
  branches.set(rootId, { id: rootId, name: "main", parentId: null, physical: options.database, ready: true, endpoint: null, port: pgPort, sockets: new Set() })
  const prefix = `/api/v2/projects/${options.projectId}`

  const openEndpoint = async (branch: FakeBranch) => {
    const server = net.createServer((client) => {
      branch.sockets.add(client)
      client.on("close", () => branch.sockets.delete(client))
      client.on("error", () => undefined)
      let pending = Buffer.alloc(0)
      const onData = (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk])
        if (pending.length < 8) return
        const length = pending.readInt32BE(0)
        if (pending.length < length) return
        const code = pending.readInt32BE(4)
        // SSLRequest and GSSENCRequest: this compute speaks plain text only.
        if (length === 8 && (code === 80877103 || code === 80877104)) {
          pending = pending.subarray(8)
          client.write("N")
          if (pending.length > 0) onData(Buffer.alloc(0))
          return
        }
        client.off("data", onData)
        const startup = code === 80877102 ? pending.subarray(0, length) : branch.ready ? rewriteStartup(pending.subarray(0, length), options.database, branch.physical) : null
        if (startup === null) return client.destroy()
        const upstream = net.connect(pgPort, pgHost, () => {
          upstream.write(Buffer.concat([startup, pending.subarray(length)]))
          client.pipe(upstream)
          upstream.pipe(client)
        })
        upstream.on("error", () => client.destroy())
        client.on("close", () => upstream.destroy())
        upstream.on("close", () => client.destroy())
      }
      client.on("data", onData)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    branch.endpoint = server
    branch.port = (server.address() as net.AddressInfo).port
  }

  const operation = (work: () => Promise<void>, fails = false): FakeOperation => {
    const op: FakeOperation = { id: `op-${randomBytes(6).toString("hex")}`, status: "running" }
    operations.set(op.id, op)
    setTimeout(() => {
      work().then(
        () => (op.status = fails ? "failed" : "finished"),
        () => (op.status = "failed")
      )
    }, 50)
    return op
  }

  const view = (b: FakeBranch) => ({ id: b.id, name: b.name, parent_id: b.parentId, current_state: b.ready ? "ready" : "init", project_id: options.projectId })

  const fake = await listenFake(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake")
    const text = await readBody(req)
    requests.push({ method: req.method ?? "", path: `${url.pathname}${url.search}`, body: text === "" ? null : JSON.parse(text) })
    if (req.headers.authorization !== `Bearer ${options.apiKey}`) return json(res, 401, { code: "", message: "authorization failed" })
    if (!url.pathname.startsWith(`${prefix}/`)) return json(res, 404, { code: "", message: "project not found" })
    const route = url.pathname.slice(prefix.length)
    const opMatch = /^\/operations\/([^/]+)$/.exec(route)
    if (req.method === "GET" && opMatch !== null) {
      const op = operations.get(opMatch[1]!)
      return op === undefined ? json(res, 404, { message: "operation not found" }) : json(res, 200, { operation: { id: op.id, status: op.status, action: "create_branch" } })
    }
    if (req.method === "GET" && route === "/branches") {
      const search = url.searchParams.get("search") ?? ""
      return json(res, 200, { branches: [...branches.values()].filter((b) => b.name.includes(search)).map(view) })
    }
    if (req.method === "POST" && route === "/branches") {
      const body = JSON.parse(text || "{}") as { branch?: { name?: unknown; parent_id?: unknown }; endpoints?: Array<{ type?: unknown }> }
      const parentId = typeof body.branch?.parent_id === "string" ? body.branch.parent_id : rootId
      const parent = branches.get(parentId)
      if (parent === undefined) return json(res, 404, { message: "parent branch not found" })
      if (!parent.ready) return json(res, 423, { message: "parent branch is busy" })
      const name = typeof body.branch?.name === "string" ? body.branch.name : `br-${randomBytes(3).toString("hex")}`
      if ([...branches.values()].some((b) => b.name === name)) return json(res, 409, { message: "branch name taken" })
      const branch: FakeBranch = { id: `br-${randomBytes(6).toString("hex")}`, name, parentId, physical: `neon_fake_${randomBytes(6).toString("hex")}`, ready: false, endpoint: null, port: 0, sockets: new Set() }
      branches.set(branch.id, branch)
      const withEndpoint = body.endpoints?.some((e) => e.type === "read_write") === true
      if (withEndpoint) await openEndpoint(branch)
      const op = operation(async () => {
        await copyDatabase(parent.physical, branch.physical)
        branch.ready = true
      }, options.failOperations === true)
      return json(res, 201, {
        branch: view(branch),
        endpoints: withEndpoint ? [{ id: `ep-${branch.id}`, host: options.answerEndpoint?.host ?? "127.0.0.1", branch_id: branch.id, type: "read_write" }] : [],
        operations: [{ id: op.id, status: op.status, action: "create_branch" }],
        connection_uris: withEndpoint
          ? [{ connection_uri: `postgresql://owner:secret@${options.answerEndpoint?.host ?? "127.0.0.1"}:${options.answerEndpoint?.port ?? branch.port}/${options.database}`, connection_parameters: { database: options.database, host: "127.0.0.1" } }]
          : []
      })
    }
    const branchMatch = /^\/branches\/([^/]+)$/.exec(route)
    if (req.method === "DELETE" && branchMatch !== null && deleteStatus !== null) return json(res, deleteStatus, { message: "try again later" })
    if (req.method === "DELETE" && branchMatch !== null) {
      const branch = branches.get(branchMatch[1]!)
      if (branch === undefined) return json(res, 404, { message: "branch not found" })
      if (branch.id === rootId) return json(res, 400, { message: "cannot delete the default branch" })
      if ([...branches.values()].some((b) => b.parentId === branch.id)) return json(res, 422, { message: "branch has children" })
      branches.delete(branch.id)
      for (const socket of branch.sockets) socket.destroy()
      branch.endpoint?.close()
      const op = operation(() => queryDatabase("postgres", `drop database if exists "${branch.physical}" with (force)`).then(() => undefined))
      return json(res, 200, { branch: view(branch), operations: [{ id: op.id, status: op.status, action: "delete_timeline" }] })
    }
    return json(res, 404, { message: "not found" })
  })

  return {
    url: `http://127.0.0.1:${fake.port}/api/v2`,
    rootId,
    requests,
    /** The branch by its name at the service, with the database on the test PostgreSQL that holds it. */
    branchNamed: (name: string) => [...branches.values()].find((b) => b.name === name),
    branchCount: () => branches.size - 1,
    /** Deletes answer this status (a service that is down or busy) until set back to null. */
    failDeletes: (status: number | null) => {
      deleteStatus = status
    },
    stop: async () => {
      for (const b of branches.values()) {
        for (const socket of b.sockets) socket.destroy()
        b.endpoint?.close()
        if (b.id !== rootId) await queryDatabase("postgres", `drop database if exists "${b.physical}" with (force)`).catch(() => undefined)
      }
      await new Promise<void>((resolve) => fake.server.close(() => resolve()))
    }
  }
}
