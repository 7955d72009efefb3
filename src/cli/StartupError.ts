import { Cause, ConfigError, Effect, Option } from "effect"

const describeConfigError = (error: ConfigError.ConfigError): string => {
  switch (error._op) {
    case "And":
    case "Or":
      return describeConfigError(error.left)
    case "InvalidData":
    case "MissingData":
    case "SourceUnavailable":
    case "Unsupported":
      return `${error.path.join("_")}: ${error.message}`
  }
}

/** One clear line on stderr for a failure before the gateway is up, then exit code 1. */
export const describeStartupFailure = (cause: Cause.Cause<unknown>): string => {
  const failure = Option.getOrUndefined(Cause.failureOption(cause))
  if (ConfigError.isConfigError(failure)) return `sluice: invalid configuration: ${describeConfigError(failure)}`
  if (failure !== null && typeof failure === "object" && "message" in failure) {
    const tag = "_tag" in failure ? String(failure._tag) : "Error"
    const reason = (failure as { cause?: { message?: string } }).cause?.message
    return `sluice: cannot start (${tag}): ${String(failure.message)}${reason ? `: ${reason}` : ""}`
  }
  return `sluice: cannot start: ${Cause.pretty(cause).split("\n")[0]}`
}

export const exitWithStartupError = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.tapErrorCause(effect, (cause) =>
    Cause.isInterruptedOnly(cause) ? Effect.void : Effect.sync(() => console.error(describeStartupFailure(cause)))
  )
