import { useState } from "react"
import { KEY_PATTERN } from "../../domain/ApiKey"
import { KEY_PLACEHOLDER, MCP_CLIENTS, type McpClient } from "../../domain/McpClientConfig"
import { CopyButton } from "../components/CopyButton"
import { ErrorBanner, Loaded } from "../components/States"
import { useAction, useApi } from "../client/useApi"

const NAMES: Record<McpClient, string> = { "claude-desktop": "Claude Desktop", "claude-code": "Claude Code", cursor: "Cursor", vscode: "VS Code" }

export const McpConnectPage = () => {
  const [client, setClient] = useState<McpClient>("claude-desktop")
  const [tools, setTools] = useState<"core" | "all">("core")
  const [key, setKey] = useState("")
  const [made, setMade] = useState(false)
  const create = useAction()
  const [config, reload] = useApi((api) => api.mcp.clientConfig({ urlParams: { client, tools } }), [client, tools])
  const chosenKey = KEY_PATTERN.test(key.trim()) ? key.trim() : null
  // A key made here has the scopes the MCP tools need; it is shown in the snippet now and never again.
  // Key names are unique in an org: each key made here is named for its client, the day, and a few random characters.
  const makeKey = async () => {
    setMade(false)
    const tag = Array.from(crypto.getRandomValues(new Uint8Array(3)), (b) => b.toString(16).padStart(2, "0")).join("")
    const name = `${NAMES[client]} (MCP) ${new Date().toISOString().slice(0, 10)} ${tag}`
    const created = await create.perform((api) => api.keys.create({ payload: { name, scopes: ["read", "query"] } }))
    if (created === undefined) return
    setKey(created.key)
    setMade(true)
  }
  return (
    <section aria-labelledby="mcp-title">
      <h1 id="mcp-title">Connect an MCP client</h1>
      <div className="tabs" role="tablist" aria-label="MCP client">
        {MCP_CLIENTS.map((c) => (
          <button key={c} type="button" role="tab" aria-selected={c === client} onClick={() => setClient(c)}>
            {NAMES[c]}
          </button>
        ))}
      </div>
      <div className="row">
        <label className="grow">
          API key for this client
          <input value={key} onChange={(e) => (setKey(e.target.value), setMade(false))} placeholder={KEY_PLACEHOLDER} spellCheck={false} autoComplete="off" />
        </label>
        <button type="button" onClick={makeKey} disabled={create.pending}>
          Make a key for {NAMES[client]}
        </button>
      </div>
      <ErrorBanner error={create.error} />
      {made && (
        <p className="notice" role="status">
          A new key with the read and query scopes is in the snippet below. Copy it now: it is shown once.
        </p>
      )}
      <label className="check">
        <input type="checkbox" checked={tools === "all"} onChange={(e) => setTools(e.target.checked ? "all" : "core")} /> Offer every tool (default: the core set)
      </label>
      <Loaded value={config} what="the configuration" onRetry={reload}>
        {(c) => {
          const template = c.command ?? JSON.stringify(c.config, null, 2)
          const snippet = chosenKey === null ? template : template.replaceAll(KEY_PLACEHOLDER, chosenKey)
          return (
            <div className="card">
              {c.file !== null && (
                <p>
                  Add to <code>{c.file}</code>:
                </p>
              )}
              <pre className="snippet" aria-label="Configuration">
                {snippet}
              </pre>
              <CopyButton text={snippet} />
              {chosenKey === null && <p className="muted">{c.note} Paste one above, or make one.</p>}
            </div>
          )
        }}
      </Loaded>
    </section>
  )
}
