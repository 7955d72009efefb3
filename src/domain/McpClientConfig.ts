import { Schema } from "effect"

export const MCP_CLIENTS = ["claude-code", "claude-desktop", "cursor", "vscode"] as const
export const McpClient = Schema.Literal(...MCP_CLIENTS).annotations({
  message: () => ({ message: `client must be one of: ${MCP_CLIENTS.join(", ")}`, override: true })
})
export type McpClient = typeof McpClient.Type

export const McpClientConfigParams = Schema.Struct({
  client: McpClient,
  /** `core` gives the client the lean tool set. */
  tools: Schema.optional(Schema.Literal("core", "all").annotations({ message: () => ({ message: "tools must be core or all", override: true }) }))
})

export const McpClientConfig = Schema.Struct({
  client: McpClient,
  url: Schema.String,
  /** Where the snippet goes, for clients configured by a file. */
  file: Schema.NullOr(Schema.String),
  /** The file's content, for clients configured by a file. */
  config: Schema.NullOr(Schema.Unknown),
  /** The command to run, for clients configured from the command line. */
  command: Schema.NullOr(Schema.String),
  note: Schema.String
})
export type McpClientConfig = typeof McpClientConfig.Type

export const KEY_PLACEHOLDER = "sp_YOUR_KEY"

// Single-quoted for any shell: a URL's "?" is a glob to zsh ("no matches found").
const shellQuoted = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`

/** The snippet that points a client at this gateway's MCP endpoint, with a placeholder where the key goes. */
export const mcpClientConfig = (client: McpClient, url: string): McpClientConfig => {
  const note = `Replace ${KEY_PLACEHOLDER} with an API key that has the read and query scopes (keys are shown once, when made).`
  const headers = { "x-api-key": KEY_PLACEHOLDER }
  switch (client) {
    case "claude-code":
      return { client, url, file: null, config: null, command: `claude mcp add --transport http sluice ${shellQuoted(url)} --header "x-api-key: ${KEY_PLACEHOLDER}"`, note }
    case "cursor":
      return { client, url, file: "~/.cursor/mcp.json", config: { mcpServers: { sluice: { url, headers } } }, command: null, note }
    case "vscode":
      return { client, url, file: ".vscode/mcp.json", config: { servers: { sluice: { type: "http", url, headers } } }, command: null, note }
    case "claude-desktop":
      return {
        client,
        url,
        file: "claude_desktop_config.json",
        config: {
          mcpServers: {
            sluice: { command: "npx", args: ["-y", "mcp-remote", url, "--header", "x-api-key:${SLUICE_KEY}"], env: { SLUICE_KEY: KEY_PLACEHOLDER } }
          }
        },
        command: null,
        note: `${note} Claude Desktop reaches HTTP servers through the mcp-remote bridge (Node.js required).`
      }
  }
}
