import type { AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"

export interface CapturedMail {
  readonly from: string
  readonly to: ReadonlyArray<string>
  /** The message as sent: headers and body. */
  readonly raw: string
}

/**
 * A real SMTP server (the `smtp-server` library) on a free port that accepts mail for anyone from a
 * client that logs in as `user`/`pass`, and keeps each message. Plain text, no STARTTLS: a test's.
 */
export const startSmtpServer = async (user = "mailer", pass = "s3cret-smtp-pass", listenOn = "127.0.0.1") => {
  const messages: Array<CapturedMail> = []
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    logger: false,
    onAuth: (auth, _session, callback) =>
      auth.username === user && auth.password === pass ? callback(null, { user }) : callback(new Error("Invalid username or password")),
    onData: (stream, session, callback) => {
      const chunks: Array<Buffer> = []
      stream.on("data", (chunk: Buffer) => chunks.push(chunk))
      stream.on("end", () => {
        messages.push({
          from: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          raw: Buffer.concat(chunks).toString("utf8")
        })
        callback()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, listenOn, resolve))
  const port = (server.server.address() as AddressInfo).port
  return {
    url: `smtp://${user}:${pass}@127.0.0.1:${port}`,
    port,
    messages,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
