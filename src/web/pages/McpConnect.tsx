import { useState } from "react"
import { MCP_CLIENTS, type McpClient } from "../../domain/McpClientConfig"
import { CopyButton } from "../components/CopyButton"
import { Loaded } from "../components/States"
import { useApi } from "../client/useApi"

const NAMES: Record<McpClient, string> = { "claude-desktop": "Claude Desktop", "claude-code": "Claude Code", cursor: "Cursor", vscode: "VS Code" }

export const McpConnectPage = () => {
  const [client, setClient] = useState<McpClient>("claude-desktop")
  const [tools, setTools] = useState<"core" | "all">("core")
  const [config, reload] = useApi((api) => api.mcp.clientConfig({ urlParams: { client, tools } }), [client, tools])
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
      <label className="check">
        <input type="checkbox" checked={tools === "all"} onChange={(e) => setTools(e.target.checked ? "all" : "core")} /> Offer every tool (default: the core set)
      </label>
      <Loaded value={config} what="the configuration" onRetry={reload}>
        {(c) => {
          const snippet = c.command ?? JSON.stringify(c.config, null, 2)
          return (
            <div className="card">
              {c.file !== null && (
                <p>
                  Add to <code>{c.file}</code>:
                </p>
              )}
              <pre className="snippet">{snippet}</pre>
              <CopyButton text={snippet} />
              <p className="muted">{c.note} Make one on the API keys page.</p>
            </div>
          )
        }}
      </Loaded>
    </section>
  )
}
