import type { ConnectionInput } from "../../domain/Connection"
import type { CatalogQueries } from "./CatalogQueries"
import { duckdbCatalog } from "./Duckdb"
import { bigqueryCatalog } from "./Bigquery"
import { clickhouseCatalog, databricksCatalog, informationSchemaCatalog, trinoCatalog } from "./InformationSchema"
import { mysqlCatalog } from "./Mysql"
import { postgresCatalog } from "./Postgres"
import { redshiftCatalog } from "./Redshift"
import { snowflakeCatalog } from "./Snowflake"
import { sqliteCatalog } from "./Sqlite"

/** The catalog reads for a connection, or what the connection must name before its catalog can be read. */
export const catalogFor = (connection: ConnectionInput): CatalogQueries | { readonly needs: string } => {
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
      return connection.dataset === undefined ? { needs: "dataset" } : bigqueryCatalog(connection.project, connection.dataset)
    // Both read information_schema of the session's catalog or database, which must be set.
    case "trino":
      return connection.catalog === undefined ? { needs: "catalog" } : trinoCatalog
    case "snowflake":
      return connection.database === undefined ? { needs: "database" } : snowflakeCatalog
    case "redshift":
      return redshiftCatalog
    case "databricks":
      return databricksCatalog
    case "mssql":
      return informationSchemaCatalog({ keys: true })
  }
}

/** Why a connection's catalog cannot be read, for an error or a skipped warm-up; undefined when it can. */
export const catalogGap = (connection: ConnectionInput) => {
  const catalog = catalogFor(connection)
  return "needs" in catalog ? `Set the connection's ${catalog.needs} so its schema can be scanned` : undefined
}
