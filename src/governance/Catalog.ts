import type { ConnectionInput } from "../domain/Connection"

/** An identifier quoted for the dialect, so any table or column name reads as a name. */
export const quoteIdentifier = (dbType: ConnectionInput["db_type"], name: string) => {
  switch (dbType) {
    case "mysql":
    case "clickhouse":
    case "databricks":
    case "bigquery":
      return `\`${name.replaceAll("`", "``")}\``
    case "mssql":
      return `[${name.replaceAll("]", "]]")}]`
    default:
      return `"${name.replaceAll('"', '""')}"`
  }
}

/**
 * A read of the connection's catalog listing (schema, table, column) for every user table, in
 * column order; undefined when the connection lacks what the catalog needs (BigQuery's dataset).
 */
export const columnsQuery = (connection: ConnectionInput): string | undefined => {
  const standard = (where: string) =>
    `select table_schema, table_name, column_name from information_schema.columns where ${where} order by table_schema, table_name, ordinal_position`
  switch (connection.db_type) {
    case "postgresql":
    case "redshift":
      return standard("table_schema not in ('pg_catalog', 'information_schema')")
    case "mysql":
      return standard("table_schema = database()")
    case "duckdb":
    case "trino":
    case "databricks":
      return standard("table_schema <> 'information_schema'")
    case "snowflake":
      return standard("table_schema <> 'INFORMATION_SCHEMA'")
    case "mssql":
      return "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION"
    case "clickhouse":
      return "SELECT database, table, name FROM system.columns WHERE database = currentDatabase() ORDER BY database, table, position"
    case "sqlite":
      return "select 'main', m.name, p.name from sqlite_master m join pragma_table_info(m.name) p where m.type = 'table' and m.name not like 'sqlite_%' order by m.name, p.cid"
    case "bigquery":
      return connection.dataset === undefined
        ? undefined
        : `SELECT table_schema, table_name, column_name FROM \`${connection.project}.${connection.dataset}\`.INFORMATION_SCHEMA.COLUMNS ORDER BY table_schema, table_name, ordinal_position`
  }
}

/** A string literal for the dialect: quotes doubled, or backslash-escaped (with backslashes) where the dialect reads escapes. */
export const quoteString = (dbType: ConnectionInput["db_type"], value: string) => {
  const backslashEscapes = dbType === "mysql" || dbType === "clickhouse" || dbType === "bigquery" || dbType === "databricks"
  return backslashEscapes ? `'${value.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'` : `'${value.replaceAll("'", "''")}'`
}

/** An expression's text form, for LIKE over any column type. */
export const asText = (dbType: ConnectionInput["db_type"], expression: string) => {
  switch (dbType) {
    case "mysql":
      return `cast(${expression} as char)`
    case "mssql":
      return `cast(${expression} as nvarchar(max))`
    case "clickhouse":
      return `toString(${expression})`
    case "bigquery":
    case "databricks":
      return `cast(${expression} as string)`
    case "sqlite":
      return `cast(${expression} as text)`
    default:
      return `cast(${expression} as varchar)`
  }
}
