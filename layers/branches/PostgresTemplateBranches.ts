import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import type pg from "pg"
import { Conflict, Unavailable } from "../../src/domain/Errors"
import { ConnectorPools, type PoolTarget } from "../connectors/ConnectorPools"
import type { BranchCopy, BranchProvider } from "./BranchProvider"

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`
const sqlStateOf = (error: unknown) => (error as { code?: unknown } | null)?.code

// Every relation and schema of the copy moves to the branch's role, so its dbt runs can replace what the template held.
// The copy may hold objects a branch's role made (a copy of a branch): run by the connection's role, nothing here may resolve to
// them, so the session's search path is pg_catalog alone and every operator and function is pg_catalog's, by name.
const TAKE_OWNERSHIP = `
do $$
declare r record;
begin
  for r in select nspname from pg_catalog.pg_namespace
    where nspname operator(pg_catalog.!~) '^pg_' and nspname operator(pg_catalog.<>) 'information_schema' loop
    execute pg_catalog.format('alter schema %I owner to %I', r.nspname, pg_catalog.current_setting('sluice.branch_role'));
  end loop;
  for r in
    select c.oid::pg_catalog.regclass as relation, c.relkind from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid operator(pg_catalog.=) c.relnamespace
    where n.nspname operator(pg_catalog.!~) '^pg_' and n.nspname operator(pg_catalog.<>) 'information_schema' and c.relkind operator(pg_catalog.=) any (array['r', 'p', 'v', 'm', 'f']::"char"[])
  loop
    execute pg_catalog.format('alter %s %s owner to %I',
      case r.relkind when 'v' then 'view' when 'm' then 'materialized view' when 'f' then 'foreign table' else 'table' end,
      r.relation, pg_catalog.current_setting('sluice.branch_role'));
  end loop;
end $$`
// Sessions of the connection's role on a copy resolve names in pg_catalog only (pg_temp is never searched for functions or operators).
const CATALOG_ONLY = { search_path: "pg_catalog,pg_temp" }

/**
 * Branches as template copies on the connection's own PostgreSQL server: `CREATE DATABASE … TEMPLATE`
 * (a file copy: 51 MB in about 250 ms here), owned by a login role of the branch's own that is no
 * superuser and can create nothing beyond its database. The copy waits for, then fails on, any
 * session open on the template: the connection's role needs CREATEDB and CREATEROLE, and runs the
 * copy from its server's maintenance database.
 */
export class PostgresTemplateBranches extends Effect.Service<PostgresTemplateBranches>()("sluice/PostgresTemplateBranches", {
  effect: Effect.gen(function* () {
    const pools = yield* ConnectorPools

    /** A session as the connection's role on a database other than the template: its server's maintenance database. */
    const maintenance = (target: PoolTarget) =>
      pools.postgresSession(target, { database: "postgres", settings: CATALOG_ONLY }).pipe(Effect.orElse(() => pools.postgresSession(target, { database: "template1", settings: CATALOG_ONLY })))

    const run = (client: pg.Client, sql: string, what: string) =>
      Effect.tryPromise({ try: () => client.query(sql), catch: (error) => error }).pipe(
        Effect.catchAll((error): Effect.Effect<never, Conflict | Unavailable> => {
          const state = sqlStateOf(error)
          if (state === "55006") return Effect.fail(new Conflict({ message: `${what}: the database it copies has other sessions open; a branch copies a database no one is connected to` }))
          if (state === "42501") return Effect.fail(new Conflict({ message: `${what}: the connection's role needs the CREATEDB and CREATEROLE privileges to make branches` }))
          // The server's own words go to the log, not the caller: a copy's objects could put anything in them.
          return Effect.zipRight(
            Effect.logWarning(`${what}: ${error instanceof Error ? error.message : String(error)}`),
            Effect.fail(new Unavailable({ message: `${what} (SQLSTATE ${typeof state === "string" ? state : "unknown"}); the gateway's log has the server's message` }))
          )
        })
      )

    const connectorFailure = Effect.mapError((error: { readonly message: string }) => new Unavailable({ message: `The connection's server could not be reached for branching: ${error.message}` }))

    /** A database and a role of the same new name, and the role's password. */
    const plan = (_target: PoolTarget, _id: string): BranchCopy => {
      const name = `sb_${randomBytes(12).toString("hex")}`
      return { database: name, role: name, password: randomBytes(24).toString("hex"), host: null, port: null, ref: null }
    }

    /** Copies the parent's database into the branch's, owned by the branch's role. */
    const create = Effect.fn("PostgresTemplateBranches.create")(function* (target: PoolTarget, parent: BranchCopy | null, branch: BranchCopy) {
      const c = target.connection
      const template = parent?.database ?? (c.db_type === "postgresql" ? c.database : "")
      // The copy cannot start while a session is open on its template: the gateway's own pools to it close first.
      if (c.db_type === "postgresql") yield* pools.retireDatabase(c.host, c.port ?? 5432, template)
      yield* Effect.scoped(
        Effect.gen(function* () {
          const admin = yield* connectorFailure(maintenance(target))
          const what = "The branch could not be made"
          yield* run(admin.client, `create role ${quoted(branch.role)} login nosuperuser nocreatedb nocreaterole noreplication nobypassrls noinherit password '${branch.password ?? ""}'`, what)
          const copied = yield* Effect.either(run(admin.client, `create database ${quoted(branch.database)} template ${quoted(template)} owner ${quoted(branch.role)}`, what))
          if (copied._tag === "Left") {
            yield* Effect.ignore(run(admin.client, `drop role if exists ${quoted(branch.role)}`, what))
            return yield* copied.left
          }
        })
      )
      yield* Effect.scoped(
        Effect.gen(function* () {
          const admin = yield* connectorFailure(pools.postgresSession(target, { database: branch.database, settings: CATALOG_ONLY }))
          const what = "The branch's objects could not be handed to its role"
          yield* run(admin.client, `revoke all on database ${quoted(branch.database)} from public`, what)
          yield* run(admin.client, `grant connect, temporary on database ${quoted(branch.database)} to ${quoted(branch.role)}`, what)
          yield* run(admin.client, `set sluice.branch_role = '${branch.role}'`, what)
          yield* run(admin.client, TAKE_OWNERSHIP, what)
        })
      ).pipe(Effect.tapError(() => Effect.ignore(remove(target, branch))))
      return branch
    })

    /** Drops the branch's database (its sessions ended) and its role; nothing to drop is no failure. */
    const remove = Effect.fn("PostgresTemplateBranches.remove")(function* (target: PoolTarget, branch: BranchCopy) {
      yield* Effect.scoped(
        Effect.gen(function* () {
          const admin = yield* connectorFailure(maintenance(target))
          const what = "The branch could not be deleted"
          yield* run(admin.client, `drop database if exists ${quoted(branch.database)} with (force)`, what)
          yield* run(admin.client, `drop role if exists ${quoted(branch.role)}`, what)
        })
      )
    })

    const provider: BranchProvider = { kind: "postgres_template", plan, create, remove }
    return provider
  }),
  dependencies: [ConnectorPools.Default]
}) {}
