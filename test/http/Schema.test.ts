import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Eventually"
import { type Gateway, localKey } from "../support/Gateway"
import { startApp } from "../support/InProcess"
import { request, type RequestOptions } from "../support/Http"
import { SHOP_SCHEMA_SQL, SHOP_TABLES } from "../support/SchemaFixtures"
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/Servers"

const skip = !(await postgresAvailable())

describe("schema scans and views over HTTP on PostgreSQL", () => {
  let gateway: Gateway
  let admin: string
  let reader: string
  let database: TestDatabase

  beforeAll(async () => {
    if (skip) return
    database = await createTestDatabase()
    await database.query(SHOP_SCHEMA_SQL)
    gateway = await startApp({ env: { SP_RATE_LIMIT_EXPENSIVE_RPM: "10000", SP_PER_KEY_RPM: "10000" } })
    admin = await localKey(gateway)
    reader = (await request(gateway.url, "/api/keys", { key: admin, body: { name: "reader", scopes: ["read"] } })).json.key
    const base = { db_type: "postgresql", host: "127.0.0.1", port: 5432, database: database.name, username: "root" }
    for (const connection of [
      { name: "shop", ...base, result_cache_ttl: 600 },
      { name: "sales_only", ...base, schema_include: ["sales"], schema_exclude: ["sales.order*"] },
      { name: "no_hr_pay", ...base, blocked_tables: ["hr.salaries"] },
      // Redshift speaks PostgreSQL's protocol; its scan reads information_schema, keys included.
      { name: "as_redshift", ...base, db_type: "redshift" }
    ]) {
      expect((await request(gateway.url, "/api/connections", { key: admin, body: connection })).status).toBe(201)
    }
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    await database?.drop()
  })

  const api = (route: string, options: RequestOptions = {}) => request(gateway.url, route, { key: reader, ...options })

  it.skipIf(skip)("the first read scans the catalog: tables, views, keys, comments, indexes, partitions folded into their parent", async () => {
    const res = await api("/api/connections/shop/schema")
    expect(res.status, res.text).toBe(200)
    const schema = res.json
    expect(schema).toMatchObject({ connection: "shop", db_type: "postgresql", version: 1, table_count: SHOP_TABLES.length })
    expect(schema.fingerprint).toMatch(/^[0-9a-f]{64}$/)
    const byName = new Map(schema.tables.map((t: { schema: string; name: string }) => [`${t.schema}.${t.name}`, t]))
    expect([...byName.keys()].sort()).toEqual(SHOP_TABLES)

    expect(byName.get("sales.customers")).toMatchObject({
      kind: "table",
      comment: "People and companies who buy from the shop",
      primary_key: ["id"],
      unique_keys: [["email"]],
      row_estimate: 300
    })
    const email = (byName.get("sales.customers") as any).columns.find((c: any) => c.name === "email")
    expect(email).toMatchObject({ type: "text", nullable: false, comment: "Login and contact address", primary_key: false })
    expect(email.distinct_estimate).toBeGreaterThan(250)

    const orders = byName.get("sales.orders") as any
    expect(orders.foreign_keys).toEqual([
      { name: "orders_customer_id_fkey", columns: ["customer_id"], references: { schema: "sales", table: "customers", columns: ["id"] } }
    ])
    expect(orders.columns.find((c: any) => c.name === "status")).toMatchObject({ default: "'new'::text", nullable: false })
    expect(orders.indexes).toEqual([
      expect.objectContaining({ name: "orders_customer_idx", columns: ["customer_id", "ordered_at"], unique: false })
    ])
    expect((byName.get("sales.order_items") as any).primary_key).toEqual(["order_id", "line"])
    expect((byName.get("hr.employees") as any).foreign_keys.map((fk: any) => fk.references.table).sort()).toEqual(["departments", "employees"])

    expect(byName.get("analytics.events")).toMatchObject({ kind: "partitioned_table", partition_key: "RANGE (occurred_at)" })
    expect(byName.has("analytics.events_2025")).toBe(false)
    const view = byName.get("analytics.customer_orders") as any
    expect(view.kind).toBe("view")
    expect(view.definition).toContain("sales.customers")
    expect(view.columns.map((c: any) => c.name)).toEqual(["id", "email", "orders"])
    expect(byName.get("analytics.daily_revenue")).toMatchObject({ kind: "materialized_view" })
  })

  it.skipIf(skip)("the information_schema scan (Redshift, SQL Server, Databricks) reads keys too, composite ones in key order, and goes on without statistics it cannot read", async () => {
    const res = await api("/api/connections/as_redshift/schema")
    expect(res.status, res.text).toBe(200)
    const byName = new Map(res.json.tables.map((t: any) => [`${t.schema}.${t.name}`, t]))
    expect(byName.get("sales.orders")).toMatchObject({
      primary_key: ["id"],
      foreign_keys: [{ name: "orders_customer_id_fkey", columns: ["customer_id"], references: { schema: "sales", table: "customers", columns: ["id"] } }]
    })
    expect(byName.get("sales.customers")).toMatchObject({ primary_key: ["id"], unique_keys: [["email"]] })
    expect((byName.get("sales.order_items") as any).primary_key).toEqual(["order_id", "line"])
    expect((byName.get("sales.customers") as any).columns.find((c: any) => c.name === "id")).toMatchObject({ primary_key: true, nullable: false })
    expect(byName.get("analytics.customer_orders")).toMatchObject({ kind: "view" })
  })

  it.skipIf(skip)("a Redshift scan adds rows, size, distribution and sort keys from Redshift's system views, and table comments", async () => {
    const redshift = await createTestDatabase()
    try {
      // Redshift's svv_table_info and svv_redshift_columns, with the columns Redshift gives them, in public: the one schema
      // the connection's sessions search (Redshift keeps them in pg_catalog, which every session searches).
      await redshift.query(`
        create schema sales;
        create table sales.customers (id int primary key, email text);
        create table sales.orders (id int primary key, customer_id int references sales.customers (id), ordered_at date);
        comment on table sales.orders is 'One row per order';
        create view public.svv_table_info as select * from (values
          ('sales', 'orders', 'KEY(customer_id)', 5400::numeric, 12::bigint), ('sales', 'customers', 'ALL', 10::numeric, 1::bigint)
        ) v ("schema", "table", diststyle, tbl_rows, size);
        create view public.svv_redshift_columns as select * from (values
          (current_database()::text, 'sales', 'orders', 'id', 1, false, 2), (current_database()::text, 'sales', 'orders', 'customer_id', 2, true, 0),
          (current_database()::text, 'sales', 'orders', 'ordered_at', 3, false, 1), (current_database()::text, 'sales', 'customers', 'id', 1, false, 0)
        ) v (database_name, schema_name, table_name, column_name, ordinal_position, distkey, sortkey);
      `)
      const body = { name: "rs_dist", db_type: "redshift", host: "127.0.0.1", port: 5432, database: redshift.name, username: "root", schema_exclude: ["public"] }
      expect((await request(gateway.url, "/api/connections", { key: admin, body })).status).toBe(201)
      const res = await api("/api/connections/rs_dist/schema")
      expect(res.status, res.text).toBe(200)
      const byName = new Map(res.json.tables.map((t: any) => [`${t.schema}.${t.name}`, t]))
      expect([...byName.keys()].sort()).toEqual(["sales.customers", "sales.orders"])
      expect(byName.get("sales.orders")).toMatchObject({
        comment: "One row per order",
        row_estimate: 5400,
        size_bytes: 12 * 1_048_576,
        engine: "DISTSTYLE KEY(customer_id)",
        sort_keys: ["ordered_at", "id"],
        cluster_keys: ["customer_id"],
        primary_key: ["id"],
        foreign_keys: [{ columns: ["customer_id"], references: { schema: "sales", table: "customers", columns: ["id"] } }]
      })
      expect(byName.get("sales.customers")).toMatchObject({ engine: "DISTSTYLE ALL", row_estimate: 10, sort_keys: [], cluster_keys: [] })
      const ddl = await api("/api/connections/rs_dist/schema/ddl")
      expect(ddl.json.text).toContain("-- sales.orders | One row per order | ~5.4K rows | 12.0 MB | sorted by ordered_at, id | clustered by customer_id | DISTSTYLE KEY(customer_id)")
    } finally {
      await request(gateway.url, "/api/connections/rs_dist", { key: admin, method: "DELETE" })
      await redshift.drop()
    }
  })

  it.skipIf(skip)("compact, DDL, grouped and overview forms of the same snapshot", async () => {
    const compact = await api("/api/connections/shop/schema/compact?max_tables=100")
    expect(compact.status, compact.text).toBe(200)
    expect(compact.json).toMatchObject({ format: "compact", version: 1, table_count: SHOP_TABLES.length, total_tables: SHOP_TABLES.length })
    const lines = compact.json.text.split("\n")
    expect(lines).toContain("sales.order_items (0 rows): order_id bigint*→orders.id, line integer*, product_id integer→products.id, quantity integer")
    expect(lines.find((l: string) => l.startsWith("sales.customers"))).toBe(
      "sales.customers (300 rows): id integer*, email text, full_name text, country character(2), created_at timestamp with time zone"
    )
    // Most connected first (orders and employees each have three keys in or out).
    expect(lines.slice(0, 2).map((l: string) => l.split(" ")[0])).toEqual(["hr.employees", "sales.orders"])
    expect(compact.json.token_estimate).toBe(Math.ceil(compact.json.text.length / 4))

    const top = await api("/api/connections/shop/schema/ddl?max_tables=3")
    expect(top.json).toMatchObject({ format: "ddl", table_count: 3, total_tables: SHOP_TABLES.length })
    expect(top.json.text.match(/^CREATE TABLE \S+/gm)).toEqual(["CREATE TABLE hr.employees", "CREATE TABLE sales.orders", "CREATE TABLE sales.order_items"])
    const ddl = await api("/api/connections/shop/schema/ddl?max_tables=100")
    expect(ddl.json.text).toContain("CREATE VIEW analytics.customer_orders (")
    expect(ddl.json.text).toContain("  id bigserial NOT NULL,")
    expect(ddl.json.text).toContain("CREATE TABLE sales.orders (")
    expect(ddl.json.text).toContain("  FOREIGN KEY (customer_id) REFERENCES sales.customers (id)")
    expect(ddl.json.text).toContain("-- sales.customers | People and companies who buy from the shop | ~300 rows")
    expect(ddl.json.text).toMatch(/email text NOT NULL, -- Login and contact address; unique/)

    const grouped = await api("/api/connections/shop/schema/grouped")
    expect(grouped.json.schemas.map((g: any) => [g.schema, g.tables.length])).toEqual([
      ["analytics", 3],
      ["hr", 3],
      ["public", 40],
      ["sales", 6]
    ])

    const overview = await api("/api/connections/shop/schema/overview")
    expect(overview.json).toMatchObject({
      connection: "shop",
      db_type: "postgresql",
      table_count: 50,
      view_count: 2,
      foreign_key_count: 8,
      tables_with_foreign_keys: 6,
      recommended_format: "ddl"
    })
    expect(overview.json.hub_tables.slice(0, 3)).toEqual([
      { table: "hr.employees", foreign_keys: 3 },
      { table: "sales.orders", foreign_keys: 3 },
      { table: "sales.order_items", foreign_keys: 2 }
    ])
    expect(overview.json.largest_tables[0]).toMatchObject({ table: "sales.customers", rows: 300 })
  })

  it.skipIf(skip)("search ranks tables and columns by name words, comments and columns; filter narrows by structure", async () => {
    const search = await api(`/api/connections/shop/schema/search?q=${encodeURIComponent("who are the people buying from the shop")}`)
    expect(search.status, search.text).toBe(200)
    expect(search.json.tables[0].table).toBe("sales.customers")
    const payroll = await api("/api/connections/shop/schema/search?q=employee%20salary&limit=3")
    expect(payroll.json.tables.map((t: any) => t.table).slice(0, 2).sort()).toEqual(["hr.employees", "hr.salaries"])
    expect(payroll.json.tables.length).toBeLessThanOrEqual(3)
    const columns = await api("/api/connections/shop/schema/search?q=contact%20address")
    expect(columns.json.columns[0]).toMatchObject({ table: "sales.customers", column: { name: "email", comment: "Login and contact address" } })

    const filtered = await api("/api/connections/shop/schema/filter?column=customer_id")
    expect(filtered.json.tables.map((t: any) => `${t.schema}.${t.name}`).sort()).toEqual(["analytics.events", "sales.orders"])
    const views = await api("/api/connections/shop/schema/filter?kind=view")
    expect(views.json.total).toBe(1)
    const typed = await api("/api/connections/shop/schema/filter?schema=sales&type=numeric*&has_foreign_keys=true")
    expect(typed.json.tables.map((t: any) => t.name).sort()).toEqual(["orders", "payments", "products"])
  })

  it.skipIf(skip)("relationships: declared keys plus keys inferred from names and types; join paths with their JOIN clauses", async () => {
    const all = await api("/api/connections/shop/schema/relationships")
    expect(all.status, all.text).toBe(200)
    const declared = all.json.relationships.filter((r: any) => r.kind === "declared")
    expect(declared).toHaveLength(8)
    expect(declared).toContainEqual({
      from_table: "sales.orders",
      from_columns: ["customer_id"],
      to_table: "sales.customers",
      to_columns: ["id"],
      kind: "declared",
      confidence: 1,
      reason: "foreign key orders_customer_id_fkey"
    })
    expect(all.json.relationships.filter((r: any) => r.kind === "inferred")).toEqual([
      expect.objectContaining({ from_table: "analytics.events", from_columns: ["customer_id"], to_table: "sales.customers", to_columns: ["id"], confidence: 0.7 })
    ])
    const onlyDeclared = await api("/api/connections/shop/schema/relationships?include_inferred=false&table=customers")
    expect(onlyDeclared.json.relationships.map((r: any) => r.from_table)).toEqual(["sales.orders"])

    const paths = await api("/api/connections/shop/schema/join-paths?from=events&to=order_items")
    expect(paths.status, paths.text).toBe(200)
    expect(paths.json).toMatchObject({ from: "analytics.events", to: "sales.order_items" })
    expect(paths.json.paths[0]).toMatchObject({
      tables: ["analytics.events", "sales.customers", "sales.orders", "sales.order_items"],
      hops: 3,
      confidence: 0.7,
      sql: "FROM analytics.events\nJOIN sales.customers ON analytics.events.customer_id = sales.customers.id\nJOIN sales.orders ON sales.orders.customer_id = sales.customers.id\nJOIN sales.order_items ON sales.order_items.order_id = sales.orders.id"
    })
    expect((await api("/api/connections/shop/schema/join-paths?from=events&to=order_items&include_inferred=false")).json.paths).toEqual([])
    expect((await api("/api/connections/shop/schema/join-paths?from=events&to=order_items&max_hops=2")).json.paths).toEqual([])
    const missing = await api("/api/connections/shop/schema/join-paths?from=nope&to=orders")
    expect([missing.status, missing.json.code, missing.json.message]).toEqual([404, "not_found", 'No table "nope" on shop'])
    expect((await api("/api/connections/shop/schema/join-paths?from=orders&to=customers&max_hops=7")).json.code).toBe("invalid_request")
  })

  it.skipIf(skip)("schema link picks the tables a question needs, with the tables that join them, within a token budget", async () => {
    const linked = await api(`/api/connections/shop/schema/link?question=${encodeURIComponent("which customers placed the most orders")}`)
    expect(linked.status, linked.text).toBe(200)
    expect(linked.json).toMatchObject({ format: "ddl", total_tables: SHOP_TABLES.length })
    const names = linked.json.tables.map((t: any) => t.table)
    // The view that counts orders per customer is as relevant as the two tables it reads.
    expect(names.slice(0, 3).sort()).toEqual(["analytics.customer_orders", "sales.customers", "sales.orders"])
    expect(linked.json.text).toContain("CREATE TABLE sales.orders (")
    expect(linked.json.token_estimate).toBeLessThanOrEqual(4000)

    const payroll = await api(`/api/connections/shop/schema/link?format=compact&max_tables=4&question=${encodeURIComponent("total payroll by department")}`)
    expect(payroll.json.tables.map((t: any) => t.table)).toEqual(expect.arrayContaining(["hr.departments", "hr.salaries", "hr.employees"]))
    expect(payroll.json.text.split("\n")).toHaveLength(payroll.json.linked)

    const tight = await api(`/api/connections/shop/schema/link?max_tokens=100&question=${encodeURIComponent("customers and their orders")}`)
    expect(tight.json.linked).toBe(1)
    const json = await api(`/api/connections/shop/schema/link?format=json&max_tables=1&question=customers`)
    expect(JSON.parse(json.json.text)).toMatchObject({ schema: "sales", name: "customers" })
    const hidden = await api(`/api/connections/no_hr_pay/schema/link?question=${encodeURIComponent("employee salaries")}`)
    expect(hidden.json.tables.map((t: any) => t.table)).not.toContain("hr.salaries")
    expect((await api("/api/connections/shop/schema/link")).json.code).toBe("invalid_request")
  })

  it.skipIf(skip)("agent context: DDL for the most relevant tables, compact lines for more, and the joins between them", async () => {
    const whole = await api("/api/connections/shop/schema/agent-context")
    expect(whole.status, whole.text).toBe(200)
    expect(whole.json.text.startsWith(`-- shop: postgresql SQL, schema version ${whole.json.version} (`)).toBe(true)
    expect(whole.json).toMatchObject({ question: null, full_ddl_tables: 8 })
    expect(whole.json.text.match(/^CREATE TABLE/gm)).toHaveLength(8)
    expect(whole.json.text).toContain("-- More tables (columns only")
    expect(whole.json.text).toContain("-- sales.orders JOIN sales.customers ON sales.orders.customer_id = sales.customers.id")
    expect(whole.json.token_estimate).toBeLessThanOrEqual(8000)

    const asked = await api(`/api/connections/shop/schema/agent-context?max_tokens=400&question=${encodeURIComponent("revenue per product category")}`)
    expect(asked.json.question).toBe("revenue per product category")
    expect(asked.json.tables).toEqual(expect.arrayContaining(["sales.categories", "sales.products"]))
    expect(asked.json.text).toContain("-- sales.products JOIN sales.categories ON sales.products.category_id = sales.categories.id")
    const tight = await api(`/api/connections/shop/schema/agent-context?max_tokens=200&question=${encodeURIComponent("revenue per product category")}`)
    expect(tight.json.text).toMatch(/more tables left out to stay within 200 tokens/)
    expect(tight.json.tables.length).toBeLessThan(asked.json.tables.length)
    expect(asked.json.token_estimate).toBeLessThanOrEqual(450)
  })

  it.skipIf(skip)("include/exclude globs shape the scan; blocked tables are left out of every view and search", async () => {
    const sales = await api("/api/connections/sales_only/schema")
    expect(sales.json.tables.map((t: any) => t.name).sort()).toEqual(["categories", "customers", "payments", "products"])
    const blocked = await api("/api/connections/no_hr_pay/schema")
    expect(blocked.json.table_count).toBe(SHOP_TABLES.length - 1)
    expect(JSON.stringify(blocked.json.tables.map((t: any) => t.name))).not.toContain("salaries")
    const search = await api("/api/connections/no_hr_pay/schema/search?q=salaries")
    expect(search.json.tables.map((t: any) => t.table)).not.toContain("hr.salaries")
    expect(search.json.columns.map((c: any) => c.table)).not.toContain("hr.salaries")
    expect((await api("/api/connections/no_hr_pay/schema/compact?max_tables=1000")).json.text).not.toContain("salaries")
  })

  it.skipIf(skip)("a refresh runs in the background, reports progress, and records what changed as a new version", async () => {
    const refused = await api("/api/connections/shop/schema/refresh", { method: "POST" })
    expect([refused.status, refused.json.code]).toEqual([403, "insufficient_scope"])

    const cachedQuery = () => api("/api/query", { key: admin, body: { connection_name: "shop", sql: "select count(*) from sales.products" } })
    await cachedQuery()
    expect((await cachedQuery()).json.cached).toBe(true)
    await database.query(`create table sales.returns (id serial primary key, order_id bigint references sales.orders (id));
      alter table sales.products drop column sku; alter table sales.payments alter column amount type numeric(14, 2);
      alter table sales.customers alter column full_name set not null`)
    const expected = {
      added_tables: ["sales.returns"],
      removed_tables: [],
      changed_tables: [
        { table: "sales.customers", added_columns: [], removed_columns: [], retyped_columns: [], nullability_changed: [{ column: "full_name", nullable: false }], keys_changed: false },
        { table: "sales.payments", added_columns: [], removed_columns: [], retyped_columns: [{ column: "amount", from: "numeric(12,2)", to: "numeric(14,2)" }], nullability_changed: [], keys_changed: false },
        { table: "sales.products", added_columns: [], removed_columns: ["sku"], retyped_columns: [], nullability_changed: [], keys_changed: false }
      ]
    }
    // The live catalog against the stored snapshot, before anything is stored.
    const live = await api("/api/connections/shop/schema/diff")
    expect(live.status, live.text).toBe(200)
    expect(live.json).toMatchObject({ connection: "shop", version: 1, changed: true })
    expect({ ...live.json.diff, changed_tables: [...live.json.diff.changed_tables].sort((a: any, b: any) => a.table.localeCompare(b.table)) }).toEqual(expected)
    expect((await api("/api/connections/shop/schema/diff-history")).json).toEqual({ items: [], next_cursor: null })

    const started = await api("/api/connections/shop/schema/refresh", { key: admin, method: "POST" })
    expect(started.status, started.text).toBe(202)
    expect(started.json).toMatchObject({ connection: "shop", state: "running" })
    const finished = await eventually(() => api("/api/connections/shop/schema/refresh-status"), (res) => res.json.state !== "running", "the refresh")
    expect(finished.json, finished.text).toMatchObject({ state: "done", phase: "done", version: 2, changed: true, tables_done: SHOP_TABLES.length + 1 })
    expect(new Date(finished.json.finished_at).getTime()).toBeGreaterThanOrEqual(new Date(finished.json.started_at).getTime())

    // The structure changed: results cached under the old one are not served again.
    expect((await cachedQuery()).json.cached).toBe(false)
    const history = await api("/api/connections/shop/schema/diff-history")
    expect(history.json.items).toHaveLength(1)
    expect(history.json.items[0]).toMatchObject({ connection: "shop", from_version: 1, to_version: 2 })
    expect(history.json.items[0].diff.added_tables).toEqual(expected.added_tables)
    expect(history.json.items[0].diff.changed_tables.map((c: any) => c.table).sort()).toEqual(expected.changed_tables.map((c) => c.table))
    const changes = await api("/api/schema/changes?limit=10")
    expect(changes.json.items.map((c: any) => [c.connection, c.to_version])).toEqual([["shop", 2]])
    expect((await api("/api/connections/shop/schema/diff")).json).toMatchObject({ version: 2, changed: false })

    const schema = await api("/api/connections/shop/schema")
    expect(schema.json.version).toBe(2)
    expect(schema.json.tables.some((t: any) => t.name === "returns")).toBe(true)

    // The same structure again: the version stays, nothing is recorded as changed.
    await api("/api/connections/shop/schema/refresh", { key: admin, method: "POST" })
    const again = await eventually(() => api("/api/connections/shop/schema/refresh-status"), (res) => res.json.state !== "running", "the refresh")
    expect(again.json).toMatchObject({ state: "done", version: 2, changed: false })
  })

  it.skipIf(skip)("two connections' schemas compare side by side", async () => {
    const compared = await api("/api/connections/sales_only/schema/diff/no_hr_pay")
    expect(compared.status, compared.text).toBe(200)
    expect(compared.json).toMatchObject({ connection: "sales_only", compare: "no_hr_pay", changed: true })
    expect(compared.json.diff.added_tables).toContain("sales.orders")
    expect(compared.json.diff.added_tables).not.toContain("hr.salaries")
    expect(compared.json.diff.removed_tables).toEqual([])
    expect((await api("/api/connections/shop/schema/diff/nope")).status).toBe(404)
  })

  it.skipIf(skip)("bad input is refused with a code and message, and unknown connections are 404", async () => {
    const cases: Array<[string, number, string]> = [
      ["/api/connections/nope/schema", 404, "not_found"],
      ["/api/connections/shop/schema/compact?max_tables=0", 400, "invalid_request"],
      ["/api/connections/shop/schema/ddl?max_tables=lots", 400, "invalid_request"],
      ["/api/connections/shop/schema/search", 400, "invalid_request"],
      [`/api/connections/shop/schema/search?q=${"x".repeat(501)}`, 400, "invalid_request"],
      ["/api/connections/shop/schema/filter?kind=table_of_doom", 400, "invalid_request"],
      ["/api/connections/nope/schema/refresh-status", 404, "not_found"],
      ["/api/connections/shop/schema/diff-history?cursor=bogus", 400, "invalid_request"],
      ["/api/schema/changes?limit=0", 400, "invalid_request"]
    ]
    for (const [route, status, code] of cases) {
      const res = await api(route)
      expect([res.status, res.json.code], route).toEqual([status, code])
      expect(typeof res.json.message).toBe("string")
    }
    const bad = await api("/api/schema-cache/invalidate", { key: admin, body: { connection: "shop", extra: 1 } })
    expect([bad.status, bad.json.code]).toEqual([400, "invalid_request"])
  })

  it.skipIf(skip)("the schema cache reports what it holds and can be dropped; the next read loads the stored snapshot", async () => {
    await api("/api/connections/shop/schema/overview")
    const stats = await api("/api/schema-cache/stats")
    expect(stats.status).toBe(200)
    expect(stats.json.connections).toBeGreaterThanOrEqual(3)
    expect(stats.json.search_indexes).toBeGreaterThanOrEqual(1)
    const dropped = await api("/api/schema-cache/invalidate", { key: admin, body: { connection: "shop" } })
    expect(dropped.json).toEqual({ invalidated: 1 })
    const loadsBefore = stats.json.replica.loads
    const scansBefore = stats.json.replica.scans
    expect((await api("/api/connections/shop/schema/overview")).json.version).toBe(2)
    const after = (await api("/api/schema-cache/stats")).json
    expect(after.replica.loads).toBe(loadsBefore + 1)
    expect(after.replica.scans).toBe(scansBefore)
    expect((await api("/api/schema-cache/invalidate", { key: admin, body: {} })).json.invalidated).toBeGreaterThanOrEqual(3)
  })
})
