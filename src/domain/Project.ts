import { CONNECTION_NAME_PATTERN } from "./Connection"

/** A project is named as a connection is: 1 to 64 letters, digits, '_' or '-' (its name is a path segment of /api/projects/{name}). */
export const PROJECT_NAME_PATTERN = CONNECTION_NAME_PATTERN
