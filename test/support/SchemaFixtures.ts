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

/** Columns of the tables the relevance questions are about; every other table gets generic ones. */
const COLUMNS: Record<string, string> = {
  customers: "id, full_name, email, country, signup_date",
  orders: "id, customer_id, sales_rep_id, order_date, total_amount, status",
  order_items: "id, order_id, product_id, quantity, unit_price",
  products: "id, name, category_id, list_price",
  sales_reps: "id, full_name, region, quota",
  employees: "id, full_name, department_id, job_title_id, hire_date, manager_id",
  departments: "id, name, cost_center_id",
  salaries: "id, employee_id, amount, effective_from",
  leave_requests: "id, employee_id, starts_on, ends_on, status",
  campaigns: "id, name, channel, budget, started_at",
  leads: "id, campaign_id, lead_source_id, email, created_at",
  email_sends: "id, campaign_id, recipient, sent_at",
  email_opens: "id, email_send_id, opened_at",
  tickets: "id, customer_id, agent_id, subject, status, opened_at, closed_at",
  warehouses: "id, name, city, capacity",
  stock_levels: "id, warehouse_id, product_id, quantity_on_hand, reorder_point",
  shipments: "id, order_id, carrier_id, shipped_at, delivered_at",
  carriers: "id, name, service_level",
  subscriptions: "id, customer_id, plan_id, started_at, cancelled_at, status",
  plans: "id, name, monthly_price",
  refunds: "id, payment_id, subscription_id, amount, refunded_at",
  payments: "id, subscription_id, amount, paid_at",
  users: "id, username, email, created_at",
  login_attempts: "id, user_id, attempted_at, succeeded, ip_address",
  patients: "id, full_name, birth_date",
  appointments: "id, patient_id, doctor_id, scheduled_at, status, no_show",
  courses: "id, title, teacher_id, semester_id",
  grades: "id, student_id, course_id, score",
  properties: "id, address, city, bedrooms",
  maintenance_requests: "id, property_id, tenant_id, issue, status, opened_at",
  flights: "id, origin_airport_id, destination_airport_id, departs_at",
  bookings: "id, flight_id, passenger_id, fare_class_id, booked_at",
  machines: "id, name, production_line, installed_at",
  downtime_events: "id, machine_id, started_at, ended_at, reason",
  meters: "id, serial_number, customer_id, installed_at",
  consumption_daily: "id, meter_id, day, kwh",
  posts: "id, author_id, body, posted_at",
  likes: "id, post_id, user_id, liked_at",
  restaurants: "id, name, city, cuisine",
  reviews: "id, restaurant_id, rating, review_text, reviewed_at",
  players: "id, team_id, full_name, position",
  injuries: "id, player_id, season_id, injured_on, description"
}

const DOMAINS: ReadonlyArray<ReadonlyArray<string>> = [
  ["customers", "orders", "order_items", "products", "product_categories", "discounts", "sales_reps", "quotes", "invoices", "invoice_lines"],
  ["employees", "departments", "salaries", "job_titles", "leave_requests", "performance_reviews", "benefits", "payroll_runs", "timesheets", "candidates"],
  ["gl_accounts", "journal_entries", "budgets", "cost_centers", "expense_reports", "vendors", "purchase_orders", "tax_rates", "currencies", "exchange_rates"],
  ["campaigns", "email_sends", "email_opens", "ad_spend", "leads", "lead_sources", "utm_visits", "landing_pages", "newsletter_subscribers", "coupons"],
  ["tickets", "ticket_comments", "agents", "sla_policies", "satisfaction_surveys", "knowledge_articles", "escalations", "chat_sessions", "call_logs", "ticket_tags"],
  ["warehouses", "stock_levels", "stock_movements", "suppliers", "reorder_rules", "bins", "inventory_counts", "product_batches", "returns", "damaged_goods"],
  ["shipments", "carriers", "shipping_rates", "delivery_routes", "drivers", "vehicles", "tracking_events", "packages", "customs_declarations", "delivery_slots"],
  ["page_views", "sessions", "feature_flags", "experiments", "experiment_assignments", "clicks", "app_installs", "crash_reports", "funnels", "retention_cohorts"],
  ["subscriptions", "plans", "payments", "refunds", "credit_notes", "payment_methods", "dunning_attempts", "usage_records", "billing_addresses", "chargebacks"],
  ["users", "roles", "permissions", "user_roles", "login_attempts", "api_tokens", "audit_events", "password_resets", "mfa_devices", "sso_providers"],
  ["articles", "authors", "tags", "article_tags", "comments", "media_assets", "translations", "content_revisions", "cms_categories", "editorial_calendar"],
  ["patients", "appointments", "doctors", "prescriptions", "diagnoses", "lab_results", "insurance_claims", "clinics", "vaccinations", "medical_records"],
  ["students", "courses", "enrollments", "grades", "teachers", "classrooms", "assignments", "submissions", "attendance", "semesters"],
  ["properties", "listings", "realty_agents", "viewings", "offers", "leases", "tenants", "maintenance_requests", "rent_payments", "property_photos"],
  ["flights", "bookings", "passengers", "airports", "hotels", "hotel_reservations", "car_rentals", "itineraries", "loyalty_members", "fare_classes"],
  ["machines", "work_orders", "production_runs", "bill_of_materials", "quality_inspections", "defects", "downtime_events", "shifts", "operators", "spare_parts"],
  ["meters", "meter_readings", "tariffs", "outages", "power_plants", "grid_nodes", "consumption_daily", "solar_panels", "maintenance_logs", "energy_contracts"],
  ["posts", "likes", "follows", "messages", "social_groups", "group_members", "notifications", "abuse_reports", "hashtags", "stories"],
  ["restaurants", "menus", "menu_items", "reservations", "dining_tables", "kitchen_tickets", "ingredients", "recipes", "food_deliveries", "reviews"],
  ["teams", "players", "matches", "match_events", "leagues", "seasons", "stadiums", "match_tickets", "player_stats", "injuries"]
]

const singular = (table: string) => table.replace(/ies$/, "y").replace(/s$/, "")

/** 200 tables in 20 domains, as CREATE TABLE statements any SQL engine reads. */
export const RELEVANCE_TABLES_SQL = DOMAINS.flatMap((tables) =>
  tables.map((table, i) => {
    const sibling = tables[(i + 1) % tables.length]!
    const columns = COLUMNS[table] ?? `id, name, description, created_at, ${singular(sibling)}_id`
    return `create table ${table} (${columns.split(", ").map((c) => (c === "id" ? "id integer primary key" : `${c} text`)).join(", ")});`
  })
)

/** Questions a user would ask, and the tables that answer them. */
export const RELEVANCE_QUESTIONS: ReadonlyArray<{ readonly question: string; readonly tables: ReadonlyArray<string> }> = [
  { question: "How much did each sales rep sell last quarter?", tables: ["sales_reps", "orders"] },
  { question: "Which customers have the most open support tickets?", tables: ["customers", "tickets"] },
  { question: "What is the average salary per department?", tables: ["salaries", "departments"] },
  { question: "List employees with pending leave requests", tables: ["employees", "leave_requests"] },
  { question: "Which marketing campaigns generated the most leads?", tables: ["campaigns", "leads"] },
  { question: "What is the email open rate of each campaign?", tables: ["email_opens", "email_sends"] },
  { question: "Which warehouses are running low on stock?", tables: ["warehouses", "stock_levels"] },
  { question: "Average delivery time per shipping carrier", tables: ["shipments", "carriers"] },
  { question: "How many subscriptions were cancelled this month?", tables: ["subscriptions"] },
  { question: "Total refunds issued per plan", tables: ["refunds", "plans"] },
  { question: "Which users failed to log in more than five times?", tables: ["login_attempts", "users"] },
  { question: "Which patients missed their appointments?", tables: ["patients", "appointments"] },
  { question: "Average grade per course", tables: ["grades", "courses"] },
  { question: "Which properties have open maintenance requests?", tables: ["properties", "maintenance_requests"] },
  { question: "Most popular flights by number of bookings", tables: ["flights", "bookings"] },
  { question: "Machine downtime hours by production line", tables: ["downtime_events", "machines"] },
  { question: "Daily electricity consumption in kwh per meter", tables: ["consumption_daily", "meters"] },
  { question: "Which posts got the most likes?", tables: ["posts", "likes"] },
  { question: "Top rated restaurants by review score", tables: ["restaurants", "reviews"] },
  { question: "Which players were injured during the season?", tables: ["players", "injuries"] }
]
