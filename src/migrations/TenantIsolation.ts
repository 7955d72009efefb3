/**
 * Row-level security for a tenant table: the tenant role sees only rows of the org set in the
 * transaction (`app.org_id`); FORCE makes the policy bind the table owner too, who gets its own
 * explicit policy for system work (auth lookups, audit inserts, migrations).
 */
export const TENANT_ROLE = "sluice_tenant"

export const isolateByOrg = (
  table: string,
  options: { readonly column?: string; readonly privileges: string }
): string => {
  const column = options.column ?? "org_id"
  return `
alter table ${table} enable row level security;
alter table ${table} force row level security;
create policy ${table}_tenant on ${table} to ${TENANT_ROLE}
  using (${column} = current_setting('app.org_id', true))
  with check (${column} = current_setting('app.org_id', true));
create policy ${table}_system on ${table} to current_user using (true) with check (true);
grant ${options.privileges} on ${table} to ${TENANT_ROLE};
`
}
