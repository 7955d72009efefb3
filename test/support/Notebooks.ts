import { randomUUID } from "node:crypto"
import WebSocket from "ws"
import { request, type RequestOptions } from "./Http"

/** The Host of session `id`'s own origin on a gateway whose notebook port `notebookUrl` names (SP_NOTEBOOK_ORIGIN's default, *.localhost). */
export const notebookHost = (notebookUrl: string, id: string) => `nb-${id.slice("nb_".length)}.localhost:${new URL(notebookUrl).port}`

/** Session `id`'s origin, as a browser names it. */
export const notebookOrigin = (notebookUrl: string, id: string) => `http://${notebookHost(notebookUrl, id)}`

/** A request on the notebook port to the session its route names, at that session's own origin (this machine resolves no *.localhost: the Host says it). */
export const notebookRequest = (notebookUrl: string, route: string, options: RequestOptions = {}) => {
  const id = /^\/notebook\/([^/?]+)/.exec(route)?.[1] ?? "nb_"
  return request(notebookUrl, route, { ...options, headers: { host: notebookHost(notebookUrl, id), ...options.headers } })
}

/** A Jupyter client's kernel exchange: runs `code` on the kernel behind `url` and returns what it printed and its reply's status. */
export const runOnKernel = (url: string, headers: Record<string, string>, code: string) =>
  new Promise<{ stdout: string; status: string }>((resolve, reject) => {
    // At the session's own origin: the Host names it.
    const id = /\/notebook\/([^/]+)\//.exec(url)![1]!
    const socket = new WebSocket(url, { headers: { host: notebookHost(url.replace("ws:", "http:"), id), ...headers } })
    const msgId = randomUUID()
    let stdout = ""
    let status: string | undefined
    let idle = false
    const timer = setTimeout(() => reject(new Error(`no reply; printed so far: ${stdout}`)), 30_000)
    socket.on("open", () =>
      socket.send(
        JSON.stringify({
          header: { msg_id: msgId, username: "test", session: randomUUID(), msg_type: "execute_request", version: "5.3", date: new Date().toISOString() },
          parent_header: {},
          metadata: {},
          content: { code, silent: false, store_history: true, user_expressions: {}, allow_stdin: false, stop_on_error: true },
          channel: "shell"
        })
      )
    )
    socket.on("message", (data) => {
      const message = JSON.parse(data.toString())
      if (message.parent_header?.msg_id !== msgId) return
      if (message.msg_type === "stream") stdout += message.content.text
      if (message.msg_type === "error") stdout += `${message.content.ename}: ${message.content.evalue}`
      // The reply comes on the shell channel, the output on iopub, in no set order: done once both the reply and iopub's idle are in.
      if (message.msg_type === "execute_reply") status = message.content.status
      if (message.msg_type === "status" && message.content.execution_state === "idle") idle = true
      if (status !== undefined && idle) {
        clearTimeout(timer)
        socket.close()
        resolve({ stdout, status })
      }
    })
    socket.on("unexpected-response", (_, response) => {
      clearTimeout(timer)
      reject(new Error(`refused: ${response.statusCode}`))
    })
    socket.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
  })

