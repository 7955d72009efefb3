import { execFile } from "node:child_process"

/** The real git client, with no configuration of the machine's or the user's, and never a prompt; `HOME` is `cwd`. */
export const git = (args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      "git",
      ["-c", "user.name=Ada", "-c", "user.email=ada@example.org", "-c", "init.defaultBranch=main", ...args],
      { cwd, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd, GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0", LANG: "C", ...env }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    )
  })
