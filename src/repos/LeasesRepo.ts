import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export class LeasesRepo extends Effect.Service<LeasesRepo>()("sluice/LeasesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Takes the lease if it is free, expired or already ours; true when we hold it afterwards. */
    const acquireOrRenew = (name: string, holder: string, ttlSeconds: number) =>
      sql<{ holder: string }>`insert into leases (name, holder, acquired_at, expires_at)
        values (${name}, ${holder}, now(), now() + make_interval(secs => ${ttlSeconds}))
        on conflict (name) do update set
          holder = excluded.holder,
          acquired_at = case when leases.holder = excluded.holder then leases.acquired_at else now() end,
          expires_at = excluded.expires_at
        where leases.holder = excluded.holder or leases.expires_at < now()
        returning holder`.pipe(Effect.map((rows) => rows[0]?.holder === holder))

    const release = (name: string, holder: string) =>
      sql`delete from leases where name = ${name} and holder = ${holder}`.pipe(Effect.asVoid)

    return { acquireOrRenew, release } as const
  })
}) {}
