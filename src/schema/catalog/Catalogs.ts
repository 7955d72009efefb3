import type { ConnectionInput } from "../../domain/Connection"
import type { CatalogQueries } from "./CatalogQueries"
import { duckdbCatalog } from "./Duckdb"
import { clickhouseCatalog, informationSchemaCatalog } from "./InformationSchema"
import { mysqlCatalog } from "./Mysql"
import { postgresCatalog } from "./Postgres"
import { sqliteCatalog } from "./Sqlite"

/** The catalog reads for a connection; undefined when it lacks what its catalog needs (BigQuery's dataset). */
export const catalogFor = (connection: ConnectionInput): CatalogQueries | undefined => {
  switch (connection.db_type) {
    case "postgresql":
      return postgresCatalog
    case "mysql":
      return mysqlCatalog(connection.database)
    case "sqlite":
      return sqliteCatalog
    case "duckdb":
      return duckdbCatalog
    case "clickhouse":
      return clickhouseCatalog
    case "bigquery":
      return connection.dataset === undefined ? undefined : informationSchemaCatalog(`\`${connection.project}.${connection.dataset}\`.`)
    case "redshift":
    case "snowflake":
    case "trino":
    case "databricks":
    case "mssql":
      return informationSchemaCatalog()
  }
}
