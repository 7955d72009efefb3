import { Schema } from "effect"

export const OrgId = Schema.String.pipe(Schema.brand("OrgId"))
export type OrgId = typeof OrgId.Type

export const UserId = Schema.String.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

export const KeyId = Schema.String.pipe(Schema.brand("KeyId"))
export type KeyId = typeof KeyId.Type

export const LOCAL_ORG = OrgId.make("local")
export const LOCAL_USER = UserId.make("local")
