import { Data, Effect, Option, Redacted } from "effect"
import nodemailer from "nodemailer"
import { AppConfig } from "./AppConfig"

const isLoopback = (host: string) => host === "localhost" || host === "::1" || /^127\./.test(host)

/** A message that could not be sent; its message names what went wrong, never the server's credentials. */
export class MailNotSent extends Data.TaggedError("MailNotSent")<{ readonly message: string }> {}

export interface Mail {
  readonly to: ReadonlyArray<string>
  readonly subject: string
  readonly text: string
}

/** Email through the SMTP server of `SP_SMTP_URL` (smtp:// or smtps://, from `SP_SMTP_FROM`); without one, nothing is sent. */
export class Mailer extends Effect.Service<Mailer>()("sluice/Mailer", {
  scoped: Effect.gen(function* () {
    const config = yield* AppConfig
    const transport = Option.map(config.smtpUrl, (redacted) => {
      const url = new URL(Redacted.value(redacted))
      const secure = url.protocol === "smtps:"
      const host = url.hostname.replace(/^\[|\]$/g, "")
      return nodemailer.createTransport(
        {
          host,
          port: url.port === "" ? (secure ? 465 : 587) : Number(url.port),
          secure,
          // smtp:// to another machine must upgrade with STARTTLS, or nothing (least of all the password) is sent; on this machine plain text stays here.
          requireTLS: !secure && !isLoopback(host),
          ...(url.username === "" ? {} : { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }),
          connectionTimeout: 10_000,
          greetingTimeout: 10_000,
          socketTimeout: 30_000
        },
        { from: config.smtpFrom }
      )
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => Option.map(transport, (t) => t.close())))

    /** Sends `mail`; false when no SMTP server is configured. */
    const send = (mail: Mail): Effect.Effect<boolean, MailNotSent> =>
      Option.match(transport, {
        onNone: () => Effect.succeed(false),
        onSome: (t) =>
          Effect.tryPromise({
            try: () => t.sendMail({ to: [...mail.to], subject: mail.subject, text: mail.text }),
            catch: (cause) => {
              const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : "unknown"
              const reply = typeof cause === "object" && cause !== null && "responseCode" in cause ? `, the server replied ${String(cause.responseCode)}` : ""
              return new MailNotSent({ message: `The email could not be sent (${code}${reply})` })
            }
          }).pipe(Effect.as(true))
      })

    return { configured: Option.isSome(transport), send } as const
  })
}) {}
