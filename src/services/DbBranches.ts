import { randomBytes } from "node:crypto"
import { Effect, Either } from "effect"
import type pg from "pg"
import type { BranchCopy, BranchProvider } from "../../layers/branches/BranchProvider"
import { NeonBranches } from "../../layers/branches/NeonBranches"
import { PostgresTemplateBranches } from "../../layers/branches/PostgresTemplateBranches"
import { ConnectorPools, type PoolTarget } from "../../layers/connectors/ConnectorPools"
import { CredentialCipher } from "../../layers/CredentialCipher"
import type { PostgresqlInput } from "../domain/Connection"
import type { PiiPolicy } from "../domain/Pii"
import { type CreateDbBranch, type DbBranch, PROTECTED_BRANCHES } from "../domain/DbBranch"
import { CapacityReached, Conflict, InvalidRequest, NotFound, Unavailable } from "../domain/Errors"
import { branchGovernance, COPIED_RELATIONS, copiedRelations, dropStatement } from "../governance/BranchGovernance"
import { hashPadsOf } from "../governance/MaskExpressions"
import type { OrgId } from "../domain/Ids"
import { type Principal, principalLabel } from "../domain/Principal"
import { DbBranchesRepo, type DbBranchRow } from "../repos/DbBranchesRepo"
import { diffSchemas } from "../schema/SchemaDiff"
import { Connections } from "./Connections"
import { Schemas } from "./Schemas"

type PostgresTarget = PoolTarget & { readonly connection: typeof PostgresqlInput.Type; readonly pii: PiiPolicy }

/** The rules a copy is governed under: the connection itself (not a later one of its name), its version (its blocked tables) and its PII rules' version. */
const policyOf = (target: PostgresTarget) => `${target.connectionId}:${target.version}:${target.pii.version}`

/** What a branch shows: never its role's password, nor where a hosted service keeps it (it is reached through the gateway). */
const shown = ({ org_id: _org, owner_role: _role, owner_secret: _secret, host: _host, port: _port, provider_ref: _ref, ...branch }: DbBranchRow): DbBranch => branch

/** A branch's copy as its provider knows it; `password` is the role's, or the connection's for a branch reached as the connection's role. */
const copyOf = (row: DbBranchRow, password: string | null): BranchCopy => ({
  database: row.database,
  role: row.owner_role,
  password,
  host: row.host,
  port: row.port,
  ref: row.provider_ref
})

const protectedName = (name: string) => PROTECTED_BRANCHES.has(name.toLowerCase())
// Each branch is a whole copy of a database: an organization keeps at most this many at once.
const MAX_BRANCHES_PER_ORG = 50

/**
 * Database branches: disposable copies of a connection's database, grouped by project, each owned by
 * a role of its own that is no superuser. Made by the connection's provider (template copies on its
 * own PostgreSQL server); main, staging and prod name the connection's own databases and are never
 * made or deleted here. A job's branches are deleted by the reaper once its lease runs out or the
 * job has ended.
 */
export class DbBranches extends Effect.Service<DbBranches>()("sluice/DbBranches", {
  effect: Effect.gen(function* () {
    const repo = yield* DbBranchesRepo
    const connections = yield* Connections
    const pools = yield* ConnectorPools
    const templates = yield* PostgresTemplateBranches
    const hosted = yield* NeonBranches
    const cipher = yield* CredentialCipher
    const schemas = yield* Schemas

    const ownerOf = (row: Pick<DbBranchRow, "org_id" | "id">) => ({ orgId: row.org_id, connectionId: `branch:${row.id}` })

    /** The connection, which must be one whose server can make branches. */
    const branchable = (orgId: OrgId, connectionName: string) =>
      Effect.gen(function* () {
        const target = yield* connections.targetIn(orgId, connectionName)
        const connection = target.connection
        if (connection.db_type !== "postgresql") {
          return yield* new InvalidRequest({ message: `${connectionName} is a ${connection.db_type} connection: database branches are made on PostgreSQL connections` })
        }
        return { ...target, connection } as PostgresTarget
      })

    /** The connection's branches are made by a hosted service when its settings name one, else as template copies on its server. */
    const providerFor = (target: PostgresTarget): BranchProvider => (target.connection.branching === undefined ? templates : hosted)
    const providerOf = (row: DbBranchRow): BranchProvider => (row.provider === "hosted" ? hosted : templates)

    /** The connection's target as the branch's role on the branch's database, on its server (its pools kept apart from the connection's). */
    const branchTargetOf = (target: PostgresTarget, row: DbBranchRow, password: string): PoolTarget => ({
      ...target,
      connectionId: `${target.connectionId}:branch:${row.id}`,
      connection: {
        ...target.connection,
        ...(row.host === null ? {} : { host: row.host, port: row.port ?? 5432 }),
        database: row.database,
        username: row.owner_role,
        password
      },
      secrets: [...target.secrets, password]
    })

    /** The branch role's password: its own as stored, or the connection's where the branch is reached as the connection's role. */
    const passwordOf = (target: PostgresTarget, row: DbBranchRow) =>
      row.owner_secret === null
        ? Effect.succeed(target.connection.password ?? "")
        : cipher
            .decrypt(row.owner_secret, ownerOf(row))
            .pipe(
              Effect.map((opened) => opened.plaintext),
              Effect.mapError(() => new Conflict({ message: `The branch ${row.name}'s role password cannot be decrypted with the configured keys; delete the branch and make it again` }))
            )

    /** `branchTargetOf` with the role's password, and that password. */
    const branchLogin = (target: PostgresTarget, row: DbBranchRow) =>
      Effect.map(passwordOf(target, row), (password) => ({ branchTarget: branchTargetOf(target, row, password), password }))

    const findRow = (orgId: OrgId, connectionName: string, project: string, name: string) =>
      Effect.flatMap(repo.find(orgId, connectionName, project, name), (row) =>
        row === null ? Effect.fail(new NotFound({ message: `The project ${project} of ${connectionName} has no branch ${name}` })) : Effect.succeed(row)
      )

    const list = Effect.fn("DbBranches.list")(function* (principal: Principal, connectionName: string, project: string) {
      yield* branchable(principal.orgId, connectionName)
      return { items: (yield* repo.list(principal.orgId, connectionName, project)).map(shown) }
    })

    const create = Effect.fn("DbBranches.create")(function* (principal: Principal, connectionName: string, project: string, input: CreateDbBranch) {
      if (protectedName(input.name)) return yield* new InvalidRequest({ message: `${input.name} names one of the connection's own databases (main, staging, prod): choose another branch name` })
      const target = yield* branchable(principal.orgId, connectionName)
      const parent = input.parent === "main" ? null : yield* findRow(principal.orgId, connectionName, project, input.parent)
      if (parent !== null && parent.status !== "ready") return yield* new Conflict({ message: `The branch ${parent.name} is not ready to be copied` })
      // A copy of a branch governed under other rules would carry what those rules let into it.
      if (parent !== null && parent.governance?.policy !== policyOf(target)) {
        return yield* new Conflict({ message: `The connection's rules (blocked tables or PII rules) changed since the branch ${parent.name} was made: branch from main, or make ${parent.name} again` })
      }
      if (input.parent !== "main" && protectedName(input.parent)) return yield* new InvalidRequest({ message: "A branch copies main (the connection's database) or another branch of its project" })
      if ((yield* repo.count(principal.orgId)) >= MAX_BRANCHES_PER_ORG) {
        return yield* new CapacityReached({ message: `An organization keeps at most ${MAX_BRANCHES_PER_ORG} database branches: delete some first` })
      }
      const provider = providerFor(target)
      if (parent !== null && parent.provider !== provider.kind) {
        return yield* new Conflict({ message: `The branch ${parent.name} was made where the connection no longer makes branches: branch from main` })
      }
      const id = `dbb_${randomBytes(16).toString("hex")}`
      const planned = provider.plan(target, id)
      const row = yield* repo.insert(principal.orgId, {
        id,
        connection_name: connectionName,
        project,
        name: input.name,
        parent: input.parent,
        provider: provider.kind,
        database: planned.database,
        owner_role: planned.role,
        owner_secret: planned.password === null ? null : cipher.encrypt(planned.password, { orgId: principal.orgId, connectionId: `branch:${id}` }),
        owner_job: input.owner_job ?? null,
        created_by: principalLabel(principal),
        lease_seconds: input.lease_seconds ?? null
      })
      // Where the copy is, as soon as the provider says: what to delete should anything after fail.
      let placed = planned
      const place = (copy: BranchCopy) =>
        Effect.sync(() => {
          placed = copy
        }).pipe(Effect.zipRight(copy.ref === null ? Effect.void : repo.place(principal.orgId, id, { ref: copy.ref, host: copy.host, port: copy.port })))
      const governance = yield* Effect.gen(function* () {
        const parentCopy = parent === null ? null : copyOf(parent, null)
        const made = yield* provider.create(target, parentCopy, planned, id, place)
        const password = made.password ?? target.connection.password ?? ""
        const placedRow = { ...row, host: made.host, port: made.port, provider_ref: made.ref }
        // A copy a service made elsewhere is checked to be one: governance drops and rewrites what it reaches.
        if (made.host !== null) yield* notTheOriginal(target, placedRow, password)
        return yield* governCopy(principal, target, placedRow, password)
      }).pipe(
        Effect.tapError((failure) =>
          provider.remove(target, placed, id).pipe(
            Effect.matchEffect({
              onSuccess: () => repo.remove(principal.orgId, id),
              // A provider that refused up front (Conflict) made nothing; else what it may have made is not forgotten: the record is
              // kept as being deleted, which the reaper takes up again once it is stuck.
              onFailure: (error) =>
                failure._tag === "Conflict"
                  ? repo.remove(principal.orgId, id)
                  : Effect.zipRight(Effect.logWarning(`branch ${id}: not deleted where it was made; the reaper tries again`, error), repo.markDeleting(principal.orgId, id, true))
            })
          )
        )
      )
      return shown((yield* repo.markReady(principal.orgId, id, governance)) ?? row)
    })

    /**
     * Fails unless the branch's database is another than the connection's own: a session on the original is
     * held open while a session on the copy looks for it (its process and start) among its database's sessions.
     */
    const notTheOriginal = (target: PostgresTarget, row: DbBranchRow, password: string) =>
      Effect.scoped(
        Effect.gen(function* () {
          const unreachable = () => new Unavailable({ message: "The branch could not be checked to be a copy: a database could not be reached" })
          const query = <R extends pg.QueryResultRow>(client: pg.Client, sql: string, values: Array<unknown> = []) =>
            Effect.tryPromise({ try: () => client.query<R>(sql, values), catch: unreachable })
          const original = yield* pools.postgresSession(target, { database: target.connection.database, settings: { search_path: "pg_catalog,pg_temp" } }).pipe(Effect.mapError(unreachable))
          const seen = yield* query<{ pid: number; started: string }>(original.client, "select pg_catalog.pg_backend_pid() as pid, backend_start::text as started from pg_catalog.pg_stat_activity where pid = pg_catalog.pg_backend_pid()")
          const copy = yield* pools
            .postgresSession(branchTargetOf(target, row, password), { database: row.database, user: row.owner_role, password, settings: { search_path: "pg_catalog,pg_temp" } })
            .pipe(Effect.mapError(unreachable))
          const same = yield* query<{ same: boolean }>(
            copy.client,
            "select exists (select 1 from pg_catalog.pg_stat_activity where pid = $1 and backend_start::text = $2 and datname = pg_catalog.current_database()) as same",
            [seen.rows[0]?.pid, seen.rows[0]?.started]
          )
          if (seen.rows.length !== 1 || same.rows[0]?.same !== false) {
            return yield* new Unavailable({ message: "The branching service's answer names a database that is not a copy (it is the connection's own); nothing was done there" })
          }
        })
      )

    /**
     * Makes a fresh copy one its branch may hand out as it is: what the connection blocks is dropped and
     * PII columns hold their masked values (see branchGovernance), done as the branch's own role, so
     * nothing the copy defines (triggers, functions in constraints or indexes) runs with more rights.
     */
    const governCopy = (principal: Principal, target: PostgresTarget, row: DbBranchRow, password: string) =>
      Effect.scoped(
        Effect.gen(function* () {
          const rules = target.pii.rules
          const session = yield* pools.postgresSession(branchTargetOf(target, row, password), { database: row.database, user: row.owner_role, password, settings: { search_path: "pg_catalog,pg_temp" } }).pipe(
            Effect.mapError(() => new Unavailable({ message: "The branch could not be governed: its database could not be reached" }))
          )
          const run = (sql: string) => Effect.tryPromise({ try: () => session.client.query(sql), catch: (error) => error })
          const listed = yield* run(COPIED_RELATIONS).pipe(Effect.mapError(() => new Unavailable({ message: "The branch could not be governed: its catalog could not be read" })))
          const plan = branchGovernance(copiedRelations(listed.rows), target.connection, rules, hashPadsOf(cipher.orgSecret("pii-hash", principal.orgId)))
          const dropped: Array<string> = []
          const masked: Array<string> = []
          const nameOf = (relation: { readonly schema: string; readonly name: string }) => `${relation.schema}.${relation.name}`
          const failed = () => new Unavailable({ message: "The branch could not be governed: a relation the connection blocks could not be dropped" })
          for (const step of plan.drop) {
            yield* run(step.sql).pipe(Effect.mapError(failed))
            dropped.push(nameOf(step.relation))
          }
          for (const step of plan.mask) {
            // A rewrite first (no trigger, rule or row security applies to it); else an update with the table's own triggers off; each
            // checked to have left no value unmasked. A table where neither holds is dropped: its raw values never stay.
            const attempt = (statements: ReadonlyArray<string>) =>
              Effect.either(
                Effect.gen(function* () {
                  yield* run("begin")
                  for (const sql of statements) yield* run(sql)
                  const checked = yield* run(step.check)
                  if ((checked.rows[0] as { unmasked: number }).unmasked !== 0) return yield* Effect.fail("values left unmasked")
                  yield* run("commit")
                })
              ).pipe(Effect.tap((done) => (done._tag === "Left" ? Effect.ignore(run("rollback")) : Effect.void)))
            const rewritten = yield* attempt(step.rewrite)
            const done = rewritten._tag === "Right" ? rewritten : step.update === null ? rewritten : yield* attempt(step.update)
            if (done._tag === "Right") {
              masked.push(nameOf(step.relation))
              continue
            }
            for (const sql of step.fallback) yield* run(sql).pipe(Effect.mapError(failed))
            dropped.push(nameOf(step.relation))
          }
          for (const step of plan.refresh) {
            if (Either.isLeft(yield* Effect.either(run(step.sql)))) {
              yield* run(dropStatement(step.relation)).pipe(Effect.mapError(failed))
              dropped.push(nameOf(step.relation))
            }
          }
          yield* run(plan.analyze).pipe(Effect.mapError(() => new Unavailable({ message: "The branch could not be governed: its statistics could not be computed again" })))
          return { dropped, masked, policy: policyOf(target) }
        })
      )

    /** Drops a branch's database and role, then its record; a branch already being deleted by another caller is left to it. */
    const reap = (row: DbBranchRow, stuck = false) =>
      Effect.gen(function* () {
        const claimed = yield* repo.markDeleting(row.org_id, row.id, stuck)
        if (claimed === null) return false
        const target = yield* Effect.either(connections.targetIn(row.org_id, row.connection_name))
        if (target._tag === "Right") {
          yield* pools.retire(row.org_id, `${target.right.connectionId}:branch:${row.id}`)
          yield* providerOf(row).remove(target.right, copyOf(row, null), row.id)
        } else yield* Effect.logWarning(`branch ${row.id}: its connection ${row.connection_name} is gone, so its database ${row.database} is left on that server`)
        yield* repo.remove(row.org_id, row.id)
        return true
      })

    const remove = Effect.fn("DbBranches.remove")(function* (principal: Principal, connectionName: string, project: string, name: string) {
      if (protectedName(name)) return yield* new InvalidRequest({ message: `${name} is a protected branch (main, staging, prod): it is never deleted` })
      yield* branchable(principal.orgId, connectionName)
      const row = yield* findRow(principal.orgId, connectionName, project, name)
      if (!(yield* reap(row))) return yield* new Conflict({ message: `The branch ${name} is being made or deleted` })
      return { name, deleted: true }
    })

    /** Every branch a job owns, deleted as its job ends (one being deleted elsewhere is left to that); one that fails is the reaper's. */
    const removeOwned = Effect.fn("DbBranches.removeOwned")(function* (orgId: OrgId, job: string) {
      for (const row of yield* repo.ownedBy(orgId, job)) {
        const done = yield* Effect.either(reap(row, row.status !== "ready"))
        if (done._tag === "Left") yield* Effect.logWarning(`branch ${row.id} of ${job} could not be deleted; the reaper tries again`, done.left)
      }
    })

    /** Branches due for deleting in every org, each deleted; one that fails is retried on the next pass. */
    const reapDue = Effect.fn("DbBranches.reapDue")(function* () {
      let reaped = 0
      for (const row of yield* repo.due()) {
        const done = yield* Effect.either(reap(row, row.status !== "ready" || (row.lease_expires_at !== null && row.lease_expires_at.getTime() < Date.now())))
        if (done._tag === "Left") yield* Effect.logWarning(`branch ${row.id} could not be deleted; the next pass tries again`, done.left)
        else if (done.right) reaped++
      }
      return reaped
    })

    /** The tables two branches of a project show (main: the connection's own database), as a schema diff from `base` to `compare`. */
    const diff = Effect.fn("DbBranches.diff")(function* (principal: Principal, connectionName: string, project: string, base: string, compare: string) {
      const target = yield* branchable(principal.orgId, connectionName)
      const tablesOf = (name: string) =>
        Effect.gen(function* () {
          if (name === "main") return yield* schemas.readLive(target)
          const row = yield* findRow(principal.orgId, connectionName, project, name)
          if (row.status !== "ready") return yield* new Conflict({ message: `The branch ${name} is not ready` })
          return yield* schemas.readLive((yield* branchLogin(target, row)).branchTarget)
        })
      const [before, after] = yield* Effect.all([tablesOf(base), tablesOf(compare)], { concurrency: 2 })
      return { project, base, compare, diff: diffSchemas(before, after) }
    })

    /** A ready branch's database as its own role sees it, for the dbt proxy's upstream; NotFound for none. */
    const upstreamOf = Effect.fn("DbBranches.upstreamOf")(function* (orgId: OrgId, connectionName: string, project: string, name: string) {
      const target = yield* branchable(orgId, connectionName)
      const row = yield* findRow(orgId, connectionName, project, name)
      if (row.status !== "ready") return yield* new Unavailable({ message: `The branch ${name} is not ready` })
      // A copy governed under rules the connection no longer has could hold what it now blocks or masks.
      if (row.governance?.policy !== policyOf(target)) {
        return yield* new Conflict({ message: `The connection's rules (blocked tables or PII rules) changed since the branch ${name} was made: delete it and make it again` })
      }
      const { branchTarget, password } = yield* branchLogin(target, row)
      return { target, branch: row, branchTarget, password }
    })

    return { list, create, remove, removeOwned, reapDue, diff, upstreamOf } as const
  }),
  dependencies: [DbBranchesRepo.Default, Connections.Default, PostgresTemplateBranches.Default, NeonBranches.Default, Schemas.Default, ConnectorPools.Default, CredentialCipher.Default]
}) {}
