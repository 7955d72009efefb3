import * as fs from "node:fs"
import * as path from "node:path"
import { git } from "./Git"
import { request } from "./Http"

/**
 * What an evaluation needs on a fresh gateway, made as a user makes it: the connection `shop` to
 * `database`, a workspace project whose repository holds the eval set's `manifest` (pushed from a
 * clone in `work`), and the organization's eval settings pointing at both.
 */
export const evalSetUp = async (url: string, admin: string, database: string, work: string, manifest: string) => {
  const connection = { name: "shop", db_type: "postgresql", host: "127.0.0.1", port: 5432, database, username: "root" }
  const made = await request(url, "/api/connections", { key: admin, body: connection })
  if (made.status !== 201) throw new Error(`the connection was not made: ${made.text}`)
  const projectId = (await request(url, "/api/workspace-projects", { key: admin, body: { name: "evals" } })).json.id as string
  if ((await git(["clone", "-q", `${url.replace("http://", `http://git:${admin}@`)}/git/${projectId}.git`, "repo"], work)).code !== 0) throw new Error("the set's repository was not cloned")
  const repo = path.join(work, "repo")
  fs.writeFileSync(path.join(repo, "eval.yaml"), manifest)
  await git(["add", "-A"], repo)
  await git(["commit", "-q", "-m", "set"], repo)
  if ((await git(["push", "-q", "origin", "HEAD:main"], repo)).code !== 0) throw new Error("the set was not pushed")
  const saved = await request(url, "/api/evals/config", {
    key: admin,
    method: "PUT",
    body: { runner_profile: "python-sandbox", connection_name: "shop", eval_set: { kind: "repository", workspace_project_id: projectId, path: ".", ref: null } }
  })
  if (saved.status !== 200) throw new Error(`the eval settings were not saved: ${saved.text}`)
  return { projectId, repo }
}
