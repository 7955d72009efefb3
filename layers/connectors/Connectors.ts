import type { DbType } from "../../src/domain/Connection"
import { BigqueryConnector } from "./Bigquery"
import { ClickhouseConnector } from "./Clickhouse"
import type { Connector } from "./Connector"
import { DatabricksConnector } from "./Databricks"
import { DuckdbConnector } from "./Duckdb"
import { MssqlConnector } from "./Mssql"
import { MysqlConnector } from "./Mysql"
import { PostgresConnector, RedshiftConnector } from "./Postgres"
import { SnowflakeConnector } from "./Snowflake"
import { SqliteConnector } from "./Sqlite"
import { TrinoConnector } from "./Trino"

/** The connector for each db_type this build can open; a type missing here is refused, never faked. */
export const CONNECTORS: Partial<Record<DbType, Connector<any>>> = {
  postgresql: PostgresConnector,
  redshift: RedshiftConnector,
  mysql: MysqlConnector,
  sqlite: SqliteConnector,
  duckdb: DuckdbConnector,
  mssql: MssqlConnector,
  databricks: DatabricksConnector,
  clickhouse: ClickhouseConnector,
  trino: TrinoConnector,
  bigquery: BigqueryConnector,
  snowflake: SnowflakeConnector
}

/** What the connector for a db_type can do, as the capabilities routes and tools report it (unavailable types included). */
export const capabilitiesOf = (dbType: DbType) => {
  const connector = CONNECTORS[dbType]
  if (connector === undefined) {
    return {
      db_type: dbType,
      available: false,
      driver: null,
      transport: null,
      read_only_guard: null,
      server_side_cancel: false,
      ssh_tunnel: false,
      tls: false,
      local_file: false,
      limit_syntax: null,
      verified_against: null
    }
  }
  return { ...connector.capabilities, available: true }
}
