/** Reads until `ok` holds, every `everyMs`; fails naming `what` and the last value read once `ms` have passed. */
export const eventually = async <A>(read: () => Promise<A>, ok: (a: A) => boolean, what: string, ms = 20_000, everyMs = 100): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await read()
    if (ok(value)) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
