import * as os from "node:os"
import { ConfigProvider, Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AppConfig } from "../../layers/AppConfig"
import { Mailer } from "../../layers/Mailer"
import { freePort } from "../support/Gateway"
import { startSmtpServer } from "../support/Smtp"

/** Sends one message through a Mailer made from `env`: whether it was sent, or the error's tag and message. */
const sendWith = (env: Record<string, string>) =>
  Effect.runPromise(
    Effect.flatMap(Mailer, (mailer) => mailer.send({ to: ["someone@example.com"], subject: "Hello", text: "A body." })).pipe(
      Effect.either,
      Effect.provide(Mailer.Default.pipe(Layer.provide(AppConfig.Default), Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))))),
      Effect.scoped
    )
  )

describe("email through SMTP", () => {
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>
  beforeAll(async () => {
    smtp = await startSmtpServer()
  })
  afterAll(async () => {
    await smtp?.close()
  })

  it("sends through the server of SP_SMTP_URL, from SP_SMTP_FROM, logged in with the URL's user", async () => {
    const sent = await sendWith({ SP_SMTP_URL: smtp.url, SP_SMTP_FROM: "Sluice <gateway@example.com>" })
    expect(sent).toMatchObject({ _tag: "Right", right: true })
    expect(smtp.messages.at(-1)).toMatchObject({ from: "gateway@example.com", to: ["someone@example.com"] })
    expect(smtp.messages.at(-1)!.raw).toContain("Subject: Hello")
  })

  it("sends nothing without SP_SMTP_URL", async () => {
    expect(await sendWith({})).toMatchObject({ _tag: "Right", right: false })
  })

  it("says why a message was not sent, never with the server's password", async () => {
    const wrongPassword = smtp.url.replace("s3cret-smtp-pass", "not-the-pass-4271")
    const refused = await sendWith({ SP_SMTP_URL: wrongPassword })
    expect(refused._tag).toBe("Left")
    const message = refused._tag === "Left" ? refused.left.message : ""
    expect(message).toMatch(/could not be sent \(EAUTH, the server replied 535\)/)
    expect(message).not.toContain("not-the-pass-4271")
    const nobody = await sendWith({ SP_SMTP_URL: `smtp://127.0.0.1:${await freePort()}` })
    expect(nobody._tag === "Left" ? nobody.left.message : "").toMatch(/could not be sent \(ESOCKET|ECONNECTION/)
  })

  it("sends nothing to another machine's server that does not offer STARTTLS: the password never crosses the network in plain text", async () => {
    const address = Object.values(os.networkInterfaces())
      .flat()
      .find((candidate) => candidate?.family === "IPv4" && !candidate.internal)?.address
    if (address === undefined) return
    const remote = await startSmtpServer("mailer", "s3cret-smtp-pass", "0.0.0.0")
    try {
      const refused = await sendWith({ SP_SMTP_URL: `smtp://mailer:s3cret-smtp-pass@${address}:${remote.port}` })
      expect(refused._tag).toBe("Left")
      expect(refused._tag === "Left" ? refused.left.message : "").toMatch(/could not be sent \(ETLS/)
      expect(remote.messages).toEqual([])
    } finally {
      await remote.close()
    }
  })

  it("refuses a URL that is not smtp:// or smtps://, without echoing it", async () => {
    const refused = await Effect.runPromise(
      AppConfig.pipe(Effect.provide(AppConfig.Default), Effect.either, Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SP_SMTP_URL", "http://user:hunter2@mail.example.com"]]))))
    )
    expect(refused._tag).toBe("Left")
    expect(String(refused._tag === "Left" ? refused.left : "")).toMatch(/SP_SMTP_URL.*must be an smtp:\/\/ or smtps:\/\/ URL/)
    expect(String(refused._tag === "Left" ? refused.left : "")).not.toContain("hunter2")
  })
})
