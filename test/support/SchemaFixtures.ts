/** A shop in three schemas: keys, comments, views, a materialized view and a partitioned table, plus filler tables to 50+. */
export const SHOP_SCHEMA_SQL = `
create schema sales; create schema hr; create schema analytics;
create table sales.categories (id serial primary key, name text not null unique);
create table sales.products (id serial primary key, category_id int not null references sales.categories (id), sku text not null, name text not null, price numeric(10, 2));
create table sales.customers (id serial primary key, email text not null unique, full_name text, country char(2), created_at timestamptz default now());
comment on table sales.customers is 'People and companies who buy from the shop';
comment on column sales.customers.email is 'Login and contact address';
create table sales.orders (id bigserial primary key, customer_id int not null references sales.customers (id), status text not null default 'new', ordered_at timestamptz not null, total numeric(12, 2));
create index orders_customer_idx on sales.orders (customer_id, ordered_at);
create table sales.order_items (order_id bigint references sales.orders (id), line int, product_id int references sales.products (id), quantity int not null, primary key (order_id, line));
create table sales.payments (id serial primary key, order_id bigint not null references sales.orders (id), amount numeric(12, 2) not null, paid_at timestamptz);
create table hr.departments (id serial primary key, name text not null);
create table hr.employees (id serial primary key, department_id int references hr.departments (id), manager_id int references hr.employees (id), name text not null, ssn text);
comment on table hr.employees is 'Staff on the payroll';
create table hr.salaries (employee_id int references hr.employees (id), effective_from date, amount numeric(12, 2), primary key (employee_id, effective_from));
create table analytics.events (id bigint, occurred_at timestamptz not null, kind text, customer_id int) partition by range (occurred_at);
create table analytics.events_2025 partition of analytics.events for values from ('2025-01-01') to ('2026-01-01');
create table analytics.events_2026 partition of analytics.events for values from ('2026-01-01') to ('2027-01-01');
create view analytics.customer_orders as select c.id, c.email, count(o.id) as orders from sales.customers c left join sales.orders o on o.customer_id = c.id group by c.id, c.email;
create materialized view analytics.daily_revenue as select date_trunc('day', ordered_at) as day, sum(total) as revenue from sales.orders group by 1;
insert into sales.categories (name) values ('books'), ('games');
insert into sales.customers (email, full_name, country) select 'c' || i || '@example.com', 'Customer ' || i, 'FR' from generate_series(1, 300) i;
analyze;
` + Array.from({ length: 40 }, (_, i) => `create table public.filler_${String(i).padStart(2, "0")} (id int primary key, label text);`).join("\n")

/** Names of the shop's tables as a scan lists them (partitions folded into their parent). */
export const SHOP_TABLES = [
  "analytics.customer_orders",
  "analytics.daily_revenue",
  "analytics.events",
  "hr.departments",
  "hr.employees",
  "hr.salaries",
  "sales.categories",
  "sales.customers",
  "sales.order_items",
  "sales.orders",
  "sales.payments",
  "sales.products",
  ...Array.from({ length: 40 }, (_, i) => `public.filler_${String(i).padStart(2, "0")}`)
].sort()
