import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LOCAL_ORG, OrgId, UserId } from "../../src/domain/Ids"
import { OrgsRepo } from "../../src/repos/OrgsRepo"
import { ApiKeys } from "../../src/services/ApiKeys"
import { request } from "../support/Http"
import { localOperator, startInProcess } from "../support/InProcess"

const OTHER_ORG = OrgId.make("org_evals_other")

describe("evaluation access and settings (issue 31)", () => {
  let gateway: Awaited<ReturnType<typeof startInProcess>>
  let admin: string
  let reader: string
  let member: string
  let otherStaff: string
  let otherProject: string

  beforeAll(async () => {
    gateway = await startInProcess({ SP_ADMIN_USER_IDS: "user_staff_elsewhere", SP_PER_KEY_RPM: "100000", SP_PER_ORG_RPM: "100000" })
    admin = await gateway.keyWith(["read", "write", "admin"])
    reader = await gateway.keyWith(["read"])
    const keyFor = (orgId: OrgId, userId: string, role: "admin" | "member") =>
      gateway.runtime.runPromise(
        Effect.gen(function* () {
          yield* (yield* OrgsRepo).ensureMember({ orgId, orgName: orgId, userId: UserId.make(userId), role })
          return (yield* (yield* ApiKeys).create({ ...localOperator, orgId, userId: UserId.make(userId), role }, { name: userId, scopes: ["read", "write", "admin"] })).key
        }).pipe(Effect.provide(OrgsRepo.Default))
      )
    // A member of the local organization who is not its operator: not staff.
    member = await keyFor(LOCAL_ORG, "user_member", "admin")
    // Staff by SP_ADMIN_USER_IDS, in an organization not allow-listed.
    otherStaff = await keyFor(OTHER_ORG, "user_staff_elsewhere", "admin")
    const made = await request(gateway.url, "/api/workspace-projects", { key: otherStaff, body: { name: "theirs" } })
    expect(made.status, made.text).toBe(201)
    otherProject = made.json.id as string
    expect((await request(gateway.url, "/api/connections", { key: admin, body: { name: "wh", db_type: "postgresql", host: "127.0.0.1", port: 5432, database: "postgres", username: "root" } })).status).toBe(201)
  }, 60_000)
  afterAll(() => gateway?.stop())

  it("tells staff whether evaluations are open, and refuses everyone else", async () => {
    const open = await request(gateway.url, "/api/evals/availability", { key: reader })
    expect(open.status, open.text).toBe(200)
    expect(open.json).toEqual({ enabled: true, staff: true, organization_allowed: true, evidence_storage: "filesystem", runner_profiles: ["python-sandbox"], reasons: [] })
    const elsewhere = await request(gateway.url, "/api/evals/availability", { key: otherStaff })
    expect(elsewhere.status).toBe(200)
    expect(elsewhere.json).toMatchObject({ enabled: false, organization_allowed: false, reasons: [expect.stringMatching(/SP_EVAL_ALLOWED_ORGS/)] })
    const refused = await request(gateway.url, "/api/evals/availability", { key: member })
    expect(refused.status).toBe(403)
    expect(refused.json).toEqual({ code: "forbidden", message: expect.stringMatching(/platform staff.*SP_ADMIN_USER_IDS/) })
  })

  it("keeps settings to staff of allow-listed organizations", async () => {
    expect((await request(gateway.url, "/api/evals/config", { key: member })).status).toBe(403)
    const elsewhere = await request(gateway.url, "/api/evals/config", { key: otherStaff })
    expect(elsewhere.status).toBe(403)
    expect(elsewhere.json.message).toMatch(/not enabled for this organization/)
    expect((await request(gateway.url, "/api/evals/config", { key: otherStaff, method: "PUT", body: { max_tasks: 5 } })).status).toBe(403)
  })

  it("shows defaults, saves what is given, and keeps the rest", async () => {
    const before = await request(gateway.url, "/api/evals/config", { key: reader })
    expect(before.status).toBe(200)
    expect(before.json).toMatchObject({ connection_name: null, eval_set: null, runner_profile: null, notify_emails: [], max_tasks: 50, autorun: false, updated_at: null })
    const project = await request(gateway.url, "/api/workspace-projects", { key: admin, body: { name: "evals" } })
    const change = {
      connection_name: "wh",
      eval_set: { kind: "repository", workspace_project_id: project.json.id, path: "evals/jaffle", ref: null },
      runner_profile: "python-sandbox",
      notify_emails: ["data-team@example.com"],
      prompt_preamble: "Answer with one number.",
      max_tasks: 20,
      model: "claude-sonnet-4-5"
    }
    const saved = await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: change })
    expect(saved.status, saved.text).toBe(200)
    expect(saved.json).toMatchObject({ ...change, autorun: false, updated_by: expect.stringMatching(/^key:sp_/) })
    const again = await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body: { autorun: true, model: null } })
    expect(again.json).toMatchObject({ ...change, model: null, autorun: true })
    expect((await request(gateway.url, "/api/evals/config", { key: reader })).json).toMatchObject({ connection_name: "wh", autorun: true })
  })

  it("refuses bad settings with what is wrong, and changes nothing", async () => {
    const before = (await request(gateway.url, "/api/evals/config", { key: admin })).json
    const refusals: Array<[unknown, RegExp]> = [
      [{ connection_name: "nope" }, /no connection named nope/],
      [{ connection_name: "bad name!" }, /connection_name/],
      [{ eval_set: { kind: "repository", workspace_project_id: otherProject, path: ".", ref: null } }, /no workspace project/],
      [{ eval_set: { kind: "repository", workspace_project_id: `wsp_${"0".repeat(32)}`, path: "../x", ref: null } }, /path is a folder of the repository/],
      [{ eval_set: { kind: "repository", workspace_project_id: `wsp_${"0".repeat(32)}`, path: ".", ref: "--upload-pack=sh" } }, /ref must be a branch/],
      [{ runner_profile: "docker:evil/image" }, /runner_profile must be one of python-sandbox/],
      [{ notify_emails: Array.from({ length: 21 }, (_, i) => `a${i}@example.com`) }, /at most 20/],
      [{ notify_emails: ["not an email"] }, /not an email address/],
      [{ prompt_preamble: "x".repeat(4001) }, /at most 4000 characters/],
      [{ max_tasks: 201 }, /max_tasks must be between 1 and 200/],
      [{ max_tasks: 0 }, /max_tasks must be between 1 and 200/],
      [{ image: "evil" }, /image/]
    ]
    for (const [body, message] of refusals) {
      const answer = await request(gateway.url, "/api/evals/config", { key: admin, method: "PUT", body })
      expect(answer.status, JSON.stringify(body)).toBe(400)
      expect(answer.json.code).toBe("invalid_request")
      expect(answer.json.message, JSON.stringify(body)).toMatch(message)
    }
    expect((await request(gateway.url, "/api/evals/config", { key: admin })).json).toEqual(before)
    expect((await request(gateway.url, "/api/evals/config", { key: reader, method: "PUT", body: { max_tasks: 3 } })).status).toBe(403)
  })
})
