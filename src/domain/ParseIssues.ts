import { ParseResult } from "effect"

/** A Schema failure as lines of "path: message", the form every 400 and CLI error uses. */
export const issueMessages = (error: ParseResult.ParseError): Array<string> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) =>
    issue.path.length === 0 || issue.message.startsWith(String(issue.path[0])) ? issue.message : `${issue.path.join(".")}: ${issue.message}`
  )
