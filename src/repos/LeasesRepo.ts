import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { storeErrorsWithRefusals } from "./StoreErrors"

const Claim = Schema.Struct({ name: Schema.String, holder: Schema.String, ttlSeconds: Schema.Number })

/** The named leases that let one replica at a time run a loop. */
export class LeasesRepo extends Effect.Service<LeasesRepo>()("sluice/LeasesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A lease that cannot be taken, for whatever reason the store gives, is a lease not held: no failure here stops a leased loop.
    const failures = storeErrorsWithRefusals("lease store")

    const claim = SqlSchema.findOne({
      Request: Claim,
      Result: Schema.Struct({ holder: Schema.String }),
      execute: ({ name, holder, ttlSeconds }) => sql`insert into leases (name, holder, acquired_at, expires_at)
        values (${name}, ${holder}, now(), now() + make_interval(secs => ${ttlSeconds}))
        on conflict (name) do update set
          holder = excluded.holder,
          acquired_at = case when leases.holder = excluded.holder then leases.acquired_at else now() end,
          expires_at = excluded.expires_at
        where leases.holder = excluded.holder or leases.expires_at < now()
        returning holder`
    })
    /** Takes the lease if it is free, expired or already ours; true when we hold it afterwards. */
    const acquireOrRenew = Effect.fn("LeasesRepo.acquireOrRenew")(
      (name: string, holder: string, ttlSeconds: number) =>
        claim({ name, holder, ttlSeconds }).pipe(Effect.map(Option.exists((row) => row.holder === holder))),
      failures
    )

    const release = Effect.fn("LeasesRepo.release")(
      (name: string, holder: string) => sql`delete from leases where name = ${name} and holder = ${holder}`.pipe(Effect.asVoid),
      failures
    )

    return { acquireOrRenew, release } as const
  })
}) {}
