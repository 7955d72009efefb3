import { Schema } from "effect"

export const OrgId = Schema.String.pipe(Schema.brand("OrgId"))
export type OrgId = typeof OrgId.Type

export const UserId = Schema.String.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

export const KeyId = Schema.String.pipe(Schema.brand("KeyId"))
export type KeyId = typeof KeyId.Type

export const ConnectionId = Schema.String.pipe(Schema.brand("ConnectionId"))
export type ConnectionId = typeof ConnectionId.Type

export const BudgetId = Schema.String.pipe(Schema.brand("BudgetId"))
export type BudgetId = typeof BudgetId.Type

export const ReportId = Schema.String.pipe(Schema.brand("ReportId"))
export type ReportId = typeof ReportId.Type

export const ConversationId = Schema.String.pipe(Schema.brand("ConversationId"))
export type ConversationId = typeof ConversationId.Type

export const WatchId = Schema.String.pipe(Schema.brand("WatchId"))
export type WatchId = typeof WatchId.Type

// Each self-hosted data dir's local key is registered under an id made from its hash.
const LOCAL_KEY_ID = "key_local_"
export const localKeyId = (hash: string) => KeyId.make(`${LOCAL_KEY_ID}${hash.slice(0, 16)}`)
export const isLocalKeyId = (id: string) => id.startsWith(LOCAL_KEY_ID)

export const LOCAL_ORG = OrgId.make("local")
export const LOCAL_USER = UserId.make("local")

export const SandboxId = Schema.String.pipe(Schema.brand("SandboxId"))
export type SandboxId = typeof SandboxId.Type

export const NotebookSessionId = Schema.String.pipe(Schema.brand("NotebookSessionId"))
export type NotebookSessionId = typeof NotebookSessionId.Type
export const WorkspaceProjectId = Schema.String.pipe(Schema.brand("WorkspaceProjectId"))
export type WorkspaceProjectId = typeof WorkspaceProjectId.Type
