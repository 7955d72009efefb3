import { Effect } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CredentialCipher } from "../../layers/CredentialCipher"
import { hashPadsOf, hmacHex } from "../../src/governance/MaskExpressions"
import { LOCAL_ORG } from "../../src/domain/Ids"
import { READS } from "../governance/corpus/Reads"
import { piiPlan, renderPii } from "../governance/GuardGrammar"
import { eventually } from "../support/Eventually"
import { request } from "../support/Http"
import { startInProcess } from "../support/InProcess"
import { BLOCKED, type CopyOf, createPiiCopies, type Engine, PII_RULES, type PiiCopies, piiCopiesDir, RAW_FRAGMENTS } from "../support/PiiCopies"
import { mysqlAvailable, postgresAvailable } from "../support/Servers"

const skip = !(await postgresAvailable()) || !(await mysqlAvailable())

/** Statements an attacker with a query key used to read masked values (issue 26), per engine; {db} is the copy's database or catalog. */
const PROBES: Record<Engine, ReadonlyArray<string>> = {
  postgresql: [
    "select (c.*)::text from customers c order by c.id",
    "select cast((c.*) as varchar) from customers c order by c.id",
    "select (customers.*)::text from customers order by id",
    "select t::text from customers t order by t.id",
    "select row_to_json(c)::text from customers c order by c.id",
    "with x as (select * from customers) select (x.*)::text from x order by id",
    "select (s.*)::text from (select * from customers) s order by id",
    "select (v.*)::text from v_customers v order by id",
    "select (p.*)::text from customers_part p order by id",
    "select (p.*)::text from customers_part_1 p order by id",
    "select c.id, i, (select count(*) from generate_series(1, 300) g where g <= ascii(substr(c.email || '|' || c.ssn, i, 1))) from customers c, generate_series(1, 40) i order by 1, 2",
    "select 1 from generate_series(1, 300) limit (select ascii(substr(email, 1, 1)) from customers where id = 1)",
    "select 1 from generate_series(1, 300) offset (select ascii(substr(ssn, 1, 1)) from customers where id = 1)",
    "select c.id, (select count(*) from customers c2 where c2.email < c.email) from customers c order by 1",
    "select id, rank() over (order by email, id), rank() over (order by ssn, id) from customers order by id",
    "select id from customers order by ssn nulls first, id",
    "select count(*) from customers where email = 'alice.smith@example.com'",
    "select count(*) from customers where ssn like '123%'",
    "select count(*) from customers where length(email) > 15",
    "select count(*) from customers where ssn is null",
    "select count(*) from customers where income > 1000",
    "select count(*) from customers where birth < '1985-01-01'",
    "select email::int from customers",
    "select ssn::int from customers",
    "select 1 / (ascii(ssn) - 49) from customers where id = 1",
    "select sum(income), max(email), min(ssn), max(birth) from customers",
    "select id, email, ssn, phone, income, birth from customers order by id",
    "select count(distinct phone), count(distinct email), count(distinct ssn) from customers",
    "select a.id, b.id from customers a join customers b on a.phone = b.phone order by 1, 2",
    "select id, name from customers where name = 'Ada'",
    "select * from v_customers order by id",
    "select count(*) from customers_part where email like 'alice%'",
    "select count(*) from public.customers where email like 'a%'",
    'select count(*) from "customers" where "email" like \'a%\'',
    'select count(*) from U&"cust\\006Fmers" where email like \'a%\'',
    "select count(*) from {db}.public.customers where email like 'a%'",
    // A later CTE named like the table, which WITH RECURSIVE lets an earlier one read: its values must not be hashed for the caller.
    "with recursive g as (select name as guess, phone from customers), customers as (select 0 as id, '' as name, '' as country, '' as email, '' as ssn, '+1 555 0' || lpad(n::text, 3, '0') as phone, 0::numeric as income, null::date as birth from generate_series(0, 999) n) select c.id, g.phone from public.customers c join g on c.phone = g.phone order by 1",
    // A partition of a table partitioned by a column with a rule: which rows it holds says where their values lie.
    "select count(*) from visits_old",
    "select count(*) from visits"
  ],
  mysql: [
    "select c.id, i.n, (select count(*) from big g where g.id <= ascii(substr(concat(c.email, '|', c.ssn), i.n, 1))) from customers c, (select id as n from big where id <= 40) i order by 1, 2",
    "select c.id, (select count(*) from customers c2 where c2.email < c.email) from customers c order by 1",
    "select id, rank() over (order by email, id), rank() over (order by ssn, id) from customers order by id",
    "select id from customers order by ssn, id",
    "select count(*) from customers where email = 'alice.smith@example.com'",
    "select count(*) from customers where ssn like '123%'",
    "select count(*) from customers where length(email) > 15",
    "select count(*) from customers where ssn is null",
    "select count(*) from customers where income > 1000",
    "select count(*) from customers where birth < '1985-01-01'",
    "select sum(income), max(email), min(ssn), max(birth) from customers",
    "select id, email, ssn, phone, income, birth from customers order by id",
    "select count(distinct phone), count(distinct email), count(distinct ssn) from customers",
    "select a.id, b.id from customers a join customers b on a.phone = b.phone order by 1, 2",
    "select * from v_customers order by id",
    "select count(*) from {db}.customers where email like 'a%'",
    "select count(*) from `{db}`.`customers` where email like 'a%'",
    "select count(*) from CUSTOMERS where email like 'a%'",
    "select json_arrayagg(json_object('e', email, 's', ssn)) from customers",
    // MariaDB reads \" inside "…" as an escaped quote, and ends a line comment at a newline only.
    'select "\\" /* ", email, ssn, phone, income from customers order by id -- */ "',
    "select id -- \r, '\n, email, ssn, phone, income from customers order by id -- '",
    "select id # \r, '\n, email, ssn, phone, income from customers order by id -- '",
    "with recursive g as (select name as guess, phone from customers), customers as (select 0 as id, '' as name, '' as country, '' as email, '' as ssn, concat('+1 555 0', lpad(id - 1, 3, '0')) as phone, 0 as income, null as birth from big) select c.id, g.phone from {db}.customers c join g on c.phone = g.phone order by 1"
  ],
  sqlite: [
    "with recursive s(n) as (select 1 union all select n + 1 from s where n < 300) select c.id, i.n, (select count(*) from s where s.n <= unicode(substr(c.email || '|' || c.ssn, i.n, 1))) from customers c, (select n from s where n <= 40) i order by 1, 2",
    "select 1 from big limit (select unicode(substr(email, 1, 1)) from customers where id = 1)",
    "select 1 from big limit 1 offset (select unicode(substr(ssn, 1, 1)) from customers where id = 1)",
    "select c.id, (select count(*) from customers c2 where c2.email < c.email) from customers c order by 1",
    "select id from customers order by ssn, id",
    "select count(*) from customers where email = 'alice.smith@example.com'",
    "select count(*) from customers where ssn like '123%'",
    "select count(*) from customers where length(email) > 15",
    "select count(*) from customers where income > 1000",
    "select sum(income), max(email), min(ssn), max(birth) from customers",
    "select id, email, ssn, phone, income, birth from customers order by id",
    "select count(distinct phone), count(distinct email), count(distinct ssn) from customers",
    "select * from v_customers order by id",
    "select count(*) from main.customers where email like 'a%'",
    'select count(*) from [customers] where email like \'a%\'',
    "select json_group_array(json_object('e', email, 's', ssn)) from customers",
    // SQLite ends a line comment at a newline only.
    "select id -- \r, '\n, email, ssn, phone, income from customers order by id -- '",
    "with recursive g as (select name as guess, phone from customers), customers as (select 0 as id, '' as name, '' as country, '' as email, '' as ssn, '+1 555 0' || substr('00' || (id - 1), -3) as phone, 0 as income, null as birth from big) select c.id, g.phone from main.customers c join g on c.phone = g.phone order by 1",
    "with g as (select name as guess, phone from customers), customers as (select 0 as id, '' as name, '' as country, '' as email, '' as ssn, '+1 555 0' || substr('00' || (id - 1), -3) as phone, 0 as income, null as birth from big) select c.id, g.phone from main.customers c join g on c.phone = g.phone order by 1"
  ],
  duckdb: [
    "select c::varchar from customers c order by c.id",
    "select cast(c as varchar) from customers c order by c.id",
    "select to_json(c)::varchar from customers c order by c.id",
    "select c.id, i, (select count(*) from range(1, 300) g(g) where g <= ascii(substr(c.email || '|' || c.ssn, i, 1))) from customers c, range(1, 41) r(i) order by 1, 2",
    "select 1 from range(300) limit (select ascii(substr(email, 1, 1)) from customers where id = 1)",
    "select c.id, (select count(*) from customers c2 where c2.email < c.email) from customers c order by 1",
    "select id from customers order by ssn nulls first, id",
    "select count(*) from customers where email = 'alice.smith@example.com'",
    "select count(*) from customers where ssn like '123%'",
    "select count(*) from customers where length(email) > 15",
    "select count(*) from customers where income > 1000",
    "select email::int from customers",
    "select email::int from duck.customers",
    "select ssn::int from main.customers",
    "select sum(income), max(email), min(ssn), max(birth) from customers",
    "select id, email, ssn, phone, income, birth from customers order by id",
    "select count(distinct phone), count(distinct email), count(distinct ssn) from customers",
    "select * from v_customers order by id",
    "select count(*) from {db}.customers where email like 'a%'",
    "select count(*) from {db}.main.customers where email like 'a%'",
    'select count(*) from "Duck"."Main"."Customers" where email like \'a%\'',
    // DuckDB nests block comments: the text in them is not what a flat reading takes for code.
    "select id /* /* */ , ' */ , email, ssn, phone, income from customers order by id -- '"
  ]
}

/** Every way each engine lets a statement name the blocked table. */
/** Ways a reading of comments or quotes other than the engine's own could hide the blocked table from the guard. */
const HIDDEN_IN_LEXING: Record<Engine, ReadonlyArray<string>> = {
  postgresql: ["select 1 /* /* */ , ' */ , * from secret_salaries -- '"],
  mysql: [
    'select "\\" /* ", salary from secret_salaries -- */ "',
    "select 1 -- \r, '\n, salary from secret_salaries -- '",
    "select 1 # \r, '\n, salary from secret_salaries -- '",
    // A versioned comment runs or not by the server's version; a backtick has no escapes; -- takes a control character after it.
    "select 1 as `a\\`, 2 /*!99999 , ' */ , s.* from secret_salaries s -- '",
    "select 1 --\x01 '\n, 2 /*!99999 , ' */, salary from secret_salaries -- '",
    "select 1 /*M!999999 , ' */ , salary from secret_salaries -- '",
    "select previous value for secret_salaries",
    // The guard's parser took -- and a non-ASCII space for a comment; MariaDB reads code.
    "select `\u00a0` --\u00a0, s.* from secret_salaries s, (select 1 as `\u00a0`) z\n"
  ],
  sqlite: ["select 1 -- \r, '\n, salary from secret_salaries -- '"],
  duckdb: [
    "select 1 /* /* */ , ' */ , * from secret_salaries -- '",
    // Dollar-quote tags as PostgreSQL's scanner reads them: any letter, any length.
    "select $é$/*$é$, s.* from secret_salaries s --*/ $é$",
    `select $${"a".repeat(70)}$/*$${"a".repeat(70)}$, s.* from secret_salaries s --*/ $${"a".repeat(70)}$`,
    // An executable comment is MySQL's: to DuckDB it is a comment.
    "select 1 /*! ' */, * from secret_salaries -- '",
    // DuckDB's E'…' has backslash escapes; the guard's parser reads e as a name and the rest otherwise.
    "select e'\\'' as a, '-- ' , s.* from secret_salaries s\n"
  ]
}

/** Probes of the fifth attack that read alike on every engine. */
const EVERY_ENGINE_PROBES = [
  // Generated columns computed from a masked column carry its value unless they are masked too.
  "select * from customer_keys order by id",
  "select id, email_lc, email_len from customer_keys order by id"
]

const BLOCKED_SPELLINGS: Record<Engine, ReadonlyArray<string>> = {
  postgresql: ["secret_salaries", "public.secret_salaries", '"secret_salaries"', '"public"."secret_salaries"', "{db}.public.secret_salaries", "SECRET_SALARIES", 'U&"secret\\005Fsalaries"', "public . secret_salaries", "/* x */ secret_salaries"],
  mysql: ["secret_salaries", "{db}.secret_salaries", "`secret_salaries`", "`{db}`.`secret_salaries`", "SECRET_SALARIES", "{db} . secret_salaries"],
  sqlite: ["secret_salaries", "main.secret_salaries", '"secret_salaries"', "[secret_salaries]", "`secret_salaries`", "MAIN.SECRET_SALARIES", '"main"."secret_salaries"'],
  duckdb: ["secret_salaries", "main.secret_salaries", "{db}.secret_salaries", "{db}.main.secret_salaries", '"duck"."main"."secret_salaries"', "DUCK.SECRET_SALARIES", "Duck.Main.Secret_Salaries"]
}

const HASHES = /[0-9a-f]{64}/g

/**
 * Statements whose rows, or which rows, follow the order the engine reads them in: signups are
 * stored in the order of their SSNs, with an index on their emails, and members keyed by a masked
 * handle (fifth attack). Their answers are compared in the order they come.
 */
const ORDER_PROBES = [
  "select id from signups",
  "select id, country from signups",
  "select id from signups limit 2",
  "select id from signups order by ssn",
  "select id from signups order by email",
  "select id from signups order by country",
  "select id from signups order by country limit 2",
  "select country, id from signups order by 1",
  "select * from signups",
  "select s.id from signups s join orders o on o.customer_id = s.id",
  "select id from signups union all select id from orders",
  "select distinct country from signups",
  "select id from signups where email is not null",
  "select id from (select id from signups limit 1) t",
  "select id from (select id from signups order by ssn limit 2) t order by id",
  "select (select id from signups limit 1) as first",
  "select id from signups where id in (select id from signups limit 2) order by id",
  "with s as (select id from signups limit 3) select id from s order by id",
  "select id from signups order by country limit 1 offset 1",
  "select (select id from signups where country = 'DE') as x",
  "select rank() over (order by country) as r, id from signups order by id",
  "select row_number() over () as n, id from signups",
  "select * from (select * from signups limit 2) s",
  // MySQL and SQLite answer a column neither grouped nor aggregated from a row of the group they choose.
  "select country, id from members group by country",
  "select max(country), id from members",
  "select country, id + 0 as n from members group by 1 order by 1",
  "select id from members"
]

/** The seventh attack's, where a name was quoted, a frame computed, an alias list short, a column named like a keyword. */
const SEVENTH_ATTACK_PROBES: Record<Engine, ReadonlyArray<string>> = {
  postgresql: [
    'select "row_number"() over () as n, id from signups',
    'select pg_catalog."row_number"() over () as n, id from signups',
    'select "lag"(id) over () as n, id from signups',
    "select sum(id) over (rows (1000) preceding) as s, id from signups",
    "select sum(id) over (rows 1000+0 preceding) as s, id from signups",
    `select "string_agg"(id::text, ',') from signups`,
    'select "array_agg"(id) from signups',
    "select array(select id from signups) as a",
    "select * from (select country, id from signups) t(a)",
    "with c(a) as (select country, id from signups) select * from c"
  ],
  mysql: [
    "select country as c, id as country from members group by country",
    "select country as c, id country from members group by country",
    "select max(country), t.date from (select id as date, country from members) t",
    "select id, rand(1) as r from members",
    "select id from members order by rand(1)"
  ],
  sqlite: [
    'select "row_number"() over () as n, id from members',
    'select "group_concat"(id) from members',
    "select sum(id) over (rows (1) preceding) as s, id from members",
    "select country as c, id as country from members group by country",
    "select string_agg(country, ','), id from members"
  ],
  duckdb: [
    `select "string_agg"(id::varchar, ',') from signups`,
    'select "list"(id) from signups',
    'select "any_value"(id) from signups',
    'select "first"(id) from signups',
    "select arg_min_null(id, country) from signups",
    "select sum(id) over (rows (1) preceding) as s, id from signups order by id",
    "select * from (select country, id from signups) t(a) order by a",
    "with c(a) as (select country, id from signups) select * from c order by a"
  ]
}

/** The same, in each engine's words for listing a group's values. */
const LISTING_PROBES: Record<Engine, ReadonlyArray<string>> = {
  postgresql: [
    // The database stops at the first row whose value it cannot compute, in the order it reads them.
    "select cast(country as int) from signups",
    "select id from signups where case when id = 3 then 1 / 0 else cast(country as int) end > 0",
    "select country, string_agg(cast(id as text), ',') from signups group by country", "select array_agg(id order by country) from signups", "select distinct on (country) country, id from signups order by country"],
  mysql: ["select country, group_concat(id) from signups group by country", "select group_concat(id, country order by country separator ';') from signups"],
  sqlite: ["select country, group_concat(id) from signups group by country", "select group_concat(id, ';' order by country) from signups"],
  duckdb: [
    "select cast(country as int) from signups",
    "select id from signups where case when id = 3 then 1 // 0 else cast(country as int) end > 0",
    "select country, string_agg(cast(id as varchar), ',') from signups group by country", "select list(id order by country) from signups", "select distinct on (country) country, id from signups order by country"]
}

/**
 * An answer as a caller sees it, hashes (alone or inside a value, such as a whole row as text)
 * renamed in order of first appearance, and the copy's database name as {db}: hashed values may
 * only be told equal or not, and the two copies live in databases of different names. The rows of
 * a statement with no ORDER BY of its own come in any order: they are sorted first.
 */
const normalized = (copy: CopyOf, sql: string, result: { status: number; json: any }, inOrder = false) => {
  const unordered = !inOrder && !/order\s+by[^()]*$/i.test(sql)
  const rows = (json: any): Array<unknown> => (unordered ? [...json.rows].sort((x, y) => (JSON.stringify(x) < JSON.stringify(y) ? -1 : 1)) : json.rows)
  const answer =
    result.status !== 200
      ? { status: result.status, code: result.json?.code, message: result.json?.message }
      : { status: 200, columns: result.json.columns, rows: rows(result.json), row_count: result.json.row_count, completeness: result.json.completeness, pii_masked: result.json.pii_masked }
  const names = new Map<string, string>()
  // MariaDB's binary strings come as bytes.
  const text = JSON.stringify(answer, (_, value) => (value?.type === "Buffer" && Array.isArray(value.data) ? Buffer.from(value.data).toString("utf8") : value))
    .replaceAll(copy.database, "{db}")
    .replace(HASHES, (hash) => names.get(hash) ?? names.set(hash, `#${names.size}`).get(hash)!)
  return JSON.parse(text) as typeof answer
}

/** Every string in a JSON value, however deep. */
const textsOf = (value: unknown): Array<string> =>
  typeof value === "string" ? [value] : Array.isArray(value) ? value.flatMap(textsOf) : value !== null && typeof value === "object" ? Object.values(value).flatMap(textsOf) : []

// Statements that read the clock answer differently from one moment to the next, on any data (SQLite's date('now') and time('now') too).
const READS_THE_CLOCK = /now\(\)|'now'|current_timestamp|current_date|current_time|localtime/i

describe.skipIf(skip)("PII is masked at the source: no statement can compute with a masked value (issue 26)", () => {
  let app: Awaited<ReturnType<typeof startInProcess>>
  let copies: PiiCopies
  let reader: string
  let admin: string
  let hashKey: Buffer

  beforeAll(async () => {
    const dir = piiCopiesDir()
    app = await startInProcess({ SP_LOCAL_DB_DIRS: dir, SP_RATE_LIMIT_EXPENSIVE_RPM: "1000000", SP_PER_KEY_RPM: "1000000" })
    hashKey = await app.runtime.runPromise(Effect.map(CredentialCipher, (cipher) => cipher.orgSecret("pii-hash", LOCAL_ORG)))
    copies = await createPiiCopies(hashKey, dir)
    admin = await app.keyWith(["admin", "read", "write", "query"])
    reader = await app.keyWith(["read", "query"])
    for (const copy of copies.copies) {
      const name = `${copy.engine}_${copy.copy}`
      const created = await request(app.url, "/api/connections", { key: admin, body: { ...copy.connection, name, blocked_tables: BLOCKED } })
      expect(created.status, created.text).toBe(201)
      const rules = PII_RULES.filter((r) => copy.engine === "postgresql" || r.table !== "customers_part" && r.table !== "visits")
      expect((await request(app.url, `/api/connections/${name}/pii`, { key: admin, method: "PUT", body: { rules } })).status).toBe(200)
    }
  }, 120_000)
  afterAll(async () => {
    await app?.stop()
    await copies?.drop()
  })

  const copyOf = (engine: Engine, copy: "a" | "b") => copies.copies.find((c) => c.engine === engine && c.copy === copy)!
  const ask = async (copy: CopyOf, sql: string, inOrder = false) =>
    normalized(copy, sql, await request(app.url, "/api/query", { key: reader, body: { connection_name: `${copy.engine}_${copy.copy}`, sql: sql.replaceAll("{db}", copy.database) } }), inOrder)

  /** Statements whose answers differ between the copies, or show a raw value of copy a; and how many answered with rows. */
  const leaks = async (engine: Engine, statements: ReadonlyArray<string>, inOrder = false) => {
    const found: Array<string> = []
    let answered = 0
    for (const sql of statements) {
      const [a, b] = [await ask(copyOf(engine, "a"), sql, inOrder), await ask(copyOf(engine, "b"), sql, inOrder)]
      if (a.status === 200) answered++
      else if (process.env["SHOW_REFUSALS"]) console.log(`${sql}\n  → ${JSON.stringify(a).slice(0, 300)}`)
      const text = JSON.stringify(a)
      const raw = RAW_FRAGMENTS.find((fragment) => text.includes(fragment))
      if (raw !== undefined) found.push(`${sql}\n   shows ${raw}: ${text.slice(0, 600)}`)
      else if (JSON.stringify(a) !== JSON.stringify(b)) found.push(`${sql}\n   a: ${text.slice(0, 600)}\n   b: ${JSON.stringify(b).slice(0, 600)}`)
    }
    return Object.assign(found, { answered })
  }

  for (const engine of ["postgresql", "mysql", "sqlite", "duckdb"] as const) {
    it(`${engine}: the attack's probes learn nothing: the same answer on both copies, no raw value`, { timeout: 120_000 }, async () => {
      const probes = [...PROBES[engine], ...EVERY_ENGINE_PROBES]
      const found = await leaks(engine, probes)
      expect([...found]).toEqual([])
      // They run (a refusal would prove nothing): only a database's own error, the same on both copies, stops a few.
      expect(found.answered).toBeGreaterThan(probes.length * 0.8)
    })

    it(`${engine}: the order rows come in, and which rows a limit keeps, say nothing of masked values`, { timeout: 60_000 }, async () => {
      const probes = [...ORDER_PROBES, ...LISTING_PROBES[engine], ...SEVENTH_ATTACK_PROBES[engine]]
      const found = await leaks(engine, probes, true)
      expect([...found]).toEqual([])
      // Some are refused, or fail alike on both copies, by design: most run.
      expect(found.answered).toBeGreaterThan(probes.length * 0.6)
    })

    it(`${engine}: every read of the guard's corpus answers the same on both copies`, { timeout: 120_000 }, async () => {
      const reads = READS[engine].filter((sql) => !READS_THE_CLOCK.test(sql))
      const found = await leaks(engine, reads)
      expect([...found]).toEqual([])
      expect(found.answered).toBeGreaterThan(reads.length * 0.9)
    })

    it(`${engine}: fuzzed statements that carry, compare, order, rank, count and cast PII answer the same on both copies`, { timeout: 240_000 }, async () => {
      const seed = Number(process.env["FUZZ_SEED"] ?? Date.now() % 2 ** 31)
      const statements = fc.sample(piiPlan(engine), { numRuns: 120, seed }).map((plan) => renderPii(plan).replaceAll("shop.", "{db}."))
      const found = await leaks(engine, statements)
      expect([...found], `seed ${seed}`).toEqual([])
      // Most of them run: a refusal answers the same on both copies, and would prove nothing. (Three in four: MySQL's seed 696651845 ran 95 of 120, no leak.)
      expect(found.answered, `seed ${seed}`).toBeGreaterThan(statements.length * 0.75)
    })

    it(`${engine}: every spelling of a blocked relation is refused; unblocked tables keep working`, { timeout: 60_000 }, async () => {
      const copy = copyOf(engine, "a")
      const let_through: Array<string> = []
      for (const name of BLOCKED_SPELLINGS[engine]) {
        for (const sql of [`select count(*) from ${name}`, `select * from ${name}`]) {
          const answer = await ask(copy, sql)
          if (answer.status !== 400 || !("code" in answer) || answer.code !== "query_blocked") let_through.push(`${sql} → ${JSON.stringify(answer).slice(0, 200)}`)
        }
      }
      for (const sql of HIDDEN_IN_LEXING[engine]) {
        const answer = await ask(copy, sql)
        if (answer.status !== 400 || !("code" in answer) || answer.code !== "query_blocked") let_through.push(`${sql} → ${JSON.stringify(answer).slice(0, 200)}`)
      }
      expect(let_through).toEqual([])
      expect(await ask(copy, "select count(*) as n from canary")).toMatchObject({ status: 200, rows: [[expect.anything()]] })
    })
  }

  it("the result shows each rule's masked value, and a typo in a PII table's query gets the database's own message", async () => {
    const pg = copyOf("postgresql", "a")
    const all = await ask(pg, "select id, email, ssn, phone, income, birth from customers order by id")
    expect(all).toMatchObject({ status: 200, columns: [{ name: "id" }, { name: "email" }, { name: "ssn" }, { name: "phone" }, { name: "income" }] })
    const rows = (all as { rows: Array<Array<unknown>> }).rows
    expect(rows[0]!.slice(0, 3)).toEqual([1, "****.com", "[REDACTED]"])
    expect(rows[1]![2]).toBe("[REDACTED]")
    expect(rows[0]![3]).toBe("#0")
    expect(rows[2]![3]).toBe("#0")
    // A result over PII is ordered by every column: one whose type has no ordering is refused by the database, with a way out.
    const json = await ask(pg, "select id, row_to_json(c) from customers c")
    expect(json).toMatchObject({ status: 400, code: "query_failed" })
    expect((json as { message: string }).message).toMatch(/could not identify an ordering operator for type json\. Sluice orders a result .* cast this column/)
    expect(await ask(pg, "select id, row_to_json(c)::jsonb from customers c")).toMatchObject({ status: 200 })
    const typo = await ask(pg, "select emial from customers")
    expect(typo).toMatchObject({ status: 400, code: "query_failed" })
    expect((typo as { message: string }).message).toMatch(/emial/)
  })

  it('a refusal\'s audit row quotes no value of the statement; MySQL answers "…" as the string its session reads', async () => {
    const sql = 'select "SSN-123-45-6789", count(*) as n from members'
    const mysql = await ask(copyOf("mysql", "a"), sql)
    expect(mysql).toMatchObject({ status: 200, rows: [["SSN-123-45-6789", expect.anything()]] })
    // SQLite reads it as a column where one has that name: refused, the caller told which.
    const refused = await request(app.url, "/api/query", { key: reader, body: { connection_name: "sqlite_a", sql } })
    expect([refused.status, refused.json.code, refused.json.reason]).toEqual([400, "query_blocked", expect.stringMatching(/^"SSN-123-45-6789" is neither grouped nor aggregated/)])
    const audit = await request(app.url, "/api/audit?event_type=query&limit=100", { key: admin })
    const row = audit.json.items.find((item: { request_id: string }) => item.request_id === refused.headers["x-request-id"])
    expect(row.details.reason).toMatch(/^a column is neither grouped nor aggregated/)
    expect(JSON.stringify(row)).not.toMatch(/SSN-123|45-6789/)
  })

  it("MariaDB lists the tables and columns of its own database only, as SELECT reads it", async () => {
    const [a, b] = [copyOf("mysql", "a"), copyOf("mysql", "b")]
    const show = (sql: string) => request(app.url, "/api/query", { key: reader, body: { connection_name: "mysql_a", sql } })
    for (const sql of [`show tables from ${b.database}`, `show full tables in ${b.database}`, `show columns from ${b.database}.customers`, `show columns from customers from ${b.database}`, `describe ${b.database}.customers`]) {
      const refused = await show(sql)
      expect([sql, refused.status, refused.json.code]).toEqual([sql, 400, "query_blocked"])
    }
    expect((await show("show tables")).status).toBe(200)
    expect((await show(`show columns from ${a.database}.customers`)).status).toBe(200)
    // information_schema describes every database of the server: its rows about another are left out, however the statement asks.
    for (const sql of [
      "select distinct table_schema from information_schema.tables where table_name = 'customers'",
      "select distinct t.table_schema from information_schema.columns t join information_schema.tables u on u.table_name = t.table_name",
      `select distinct table_schema from information_schema.views where table_schema in ('${a.database}', '${b.database}')`,
      "select schema_name from INFORMATION_SCHEMA.SCHEMATA",
      "select distinct table_schema from (select * from information_schema.statistics) s",
      "with x as (select table_schema from information_schema.key_column_usage) select distinct table_schema from x"
    ]) {
      const answer = await show(sql)
      expect([sql, answer.status, answer.json.rows]).toEqual([sql, 200, [[a.database]]])
    }
    expect(Number((await show("select count(*) from information_schema.character_sets")).json.rows[0][0])).toBeGreaterThan(10)
  })

  it("every engine hashes a value to the gateway's own HMAC of it, so hashes join across connections", async () => {
    for (const engine of ["postgresql", "mysql", "sqlite", "duckdb"] as const) {
      const answer = await request(app.url, "/api/query", { key: reader, body: { connection_name: `${engine}_a`, sql: "select phone from customers where id = 1" } })
      expect(answer.json.rows, engine).toEqual([[hmacHex(hashKey, "+1 555 0100")]])
    }
  })

  it("a plan of a statement over PII shows its shape only: the same on both copies (no widths, bounds or values the planner took from the raw columns)", async () => {
    const statements = [
      "select * from customers",
      "select id, email, income from customers where name = 'Ada'",
      "select email, count(*) from customers group by email",
      "select c.id from customers c join customers d on c.email = d.email order by c.income"
    ]
    const found: Array<string> = []
    for (const engine of ["postgresql", "mysql", "sqlite", "duckdb"] as const) {
      for (const sql of statements) {
        const [a, b] = await Promise.all(
          (["a", "b"] as const).map(async (copy) => {
            const answer = await request(app.url, "/api/query/explain", { key: reader, body: { connection_name: `${engine}_${copy}`, sql } })
            expect(answer.status, answer.text).toBe(200)
            return JSON.stringify(answer.json.plan).replaceAll(copyOf(engine, copy).database, "{db}")
          })
        )
        const raw = RAW_FRAGMENTS.find((fragment) => a!.includes(fragment))
        if (raw !== undefined || a !== b) found.push(`${engine}: ${sql}\n   a: ${a!.slice(0, 400)}\n   b: ${b!.slice(0, 400)}`)
      }
    }
    expect(found).toEqual([])
  })

  it("the schema shows no statistic of a PII column (distinct values, nulls): the same on both copies", async () => {
    const admin = await app.keyWith(["admin", "read", "write", "query"])
    for (const engine of ["postgresql", "mysql", "duckdb"] as const) {
      const [a, b] = await Promise.all(
        (["a", "b"] as const).map(async (copy) => {
          const name = `${engine}_${copy}`
          // Statistics are only as fresh as the last scan: scan again after the engine has counted.
          expect((await request(app.url, `/api/connections/${name}/schema/refresh`, { key: admin, method: "POST" })).status).toBe(202)
          await eventually(() => request(app.url, `/api/connections/${name}/schema/status`, { key: reader }), (status) => status.json.state !== "running", `${name} scanned`)
          const snapshot = (await request(app.url, `/api/connections/${name}/schema`, { key: reader })).json
          const ddl = (await request(app.url, `/api/connections/${name}/schema/ddl`, { key: reader })).text
          const customers = snapshot.tables.find((t: { name: string }) => t.name === "customers")
          return { columns: customers.columns, ddl: ddl.replaceAll(copyOf(engine, copy).database, "{db}").match(/CREATE TABLE [^;]*customers \([^;]*;/g) }
        })
      )
      const pii = (columns: Array<{ name: string }>) => columns.filter((c) => ["email", "ssn", "phone", "income", "birth"].includes(c.name))
      expect(pii(a!.columns).length, engine).toBe(5)
      expect(pii(a!.columns), engine).toEqual(pii(b!.columns))
      for (const column of pii(a!.columns)) expect(column, engine).toMatchObject({ distinct_estimate: null, null_fraction: null })
      // PostgreSQL keeps statistics, and shows them for the other columns.
      if (engine === "postgresql") expect(a!.columns.find((c: { name: string }) => c.name === "name")).toMatchObject({ distinct_estimate: 5, null_fraction: 0 })
      expect(a!.ddl, engine).toEqual(b!.ddl)
    }
  })

  it("a view redefined after the scan is read as it is now: masked, and refused where it now reads a blocked table", async () => {
    for (const engine of ["postgresql", "mysql", "sqlite"] as const) {
      const copy = copyOf(engine, "a")
      // The snapshot knows v_safe as it was; nothing has read it since (what was read is confirmed at most a second before).
      const snapshot = (await request(app.url, `/api/connections/${engine}_a/schema`, { key: reader })).json
      expect(snapshot.tables.find((t: { name: string }) => t.name === "v_safe").columns.map((c: { name: string }) => c.name), engine).toEqual(["id", "name"])
      await copies.exec(copy, "drop view v_safe")
      await copies.exec(copy, "create view v_safe as select id, name, email, ssn from customers")
      await copies.exec(copy, "drop view v_plain")
      await copies.exec(copy, "create view v_plain as select 1 as id, salary as total from secret_salaries")
      const widened = await ask(copy, "select * from v_safe order by id")
      expect(widened, engine).toMatchObject({ status: 200, columns: [{ name: "id" }, { name: "name" }, { name: "email" }, { name: "ssn" }] })
      expect(RAW_FRAGMENTS.filter((fragment) => JSON.stringify(widened).includes(fragment)), engine).toEqual([])
      expect((widened as { rows: Array<Array<unknown>> }).rows[0]!.slice(2), engine).toEqual(["****.com", "[REDACTED]"])
      expect(await ask(copy, "select * from v_plain"), engine).toMatchObject({ status: 400, code: "query_blocked" })
    }
  })

  it("explain refuses what a query refuses, and no plan or message holds the hash key", async () => {
    const explain = (connection: string, sql: string) => request(app.url, "/api/query/explain", { key: reader, body: { connection_name: connection, sql } })
    expect((await explain("duckdb_a", "select * from duck.secret_salaries")).json.code).toBe("query_blocked")
    const pads = hashPadsOf(hashKey)
    for (const [connection, sql] of [
      ["postgresql_a", "select id from customers where phone = 'x' and email like '%a'"],
      ["mysql_a", "select id from customers where phone = 'x'"],
      ["duckdb_a", "select id from customers where phone = 'x'"],
      ["duckdb_a", "select phone from customers where phone = 'x' and email like '%x'"],
      ["duckdb_a", "select phone::int from customers"],
      ["postgresql_a", "select phone::int from customers"]
    ] as const) {
      const answer = await (sql.includes("::int") ? request(app.url, "/api/query", { key: reader, body: { connection_name: connection, sql } }) : explain(connection, sql))
      for (const secret of [pads.key, pads.inner, pads.outer]) {
        expect(answer.text).not.toContain(secret.slice(0, 16))
        // DuckDB prints a folded BLOB byte by byte: printable ones as themselves, the rest as \xHH.
        const blob = Buffer.from(secret.slice(0, 64), "hex").reduce((text, b) => text + (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).toUpperCase().padStart(2, "0")}`), "")
        const shown = textsOf(answer.json).join("\n")
        for (let i = 0; i + 24 <= blob.length; i += 12) expect(shown).not.toContain(blob.slice(i, i + 24))
      }
    }
  })
})
