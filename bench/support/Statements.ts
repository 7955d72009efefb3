/** A 2 KB analytic query over orders, customers and excluded_countries, as a data team writes them. */
export const ANALYTIC = `with recent as (
  select o.id, o.customer_id, o.total, o.created_at, c.country, c.segment
  from orders o join customers c on c.id = o.customer_id
  where o.created_at >= date '2024-01-01' and o.status in ('paid', 'shipped', 'delivered')
), ranked as (
  select customer_id, country, segment, total, created_at,
    row_number() over (partition by customer_id order by created_at desc) as rn,
    sum(total) over (partition by customer_id) as lifetime,
    avg(total) over (partition by country order by created_at rows between 6 preceding and current row) as moving
  from recent
), cohorts as (
  select date_trunc('month', min(created_at)) as cohort, customer_id from recent group by customer_id
)
select r.country, r.segment, c.cohort,
  count(distinct r.customer_id) as customers,
  sum(case when r.rn = 1 then r.total else 0 end) as last_order_total,
  percentile_cont(0.5) within group (order by r.lifetime) as median_lifetime,
  max(r.moving) as peak_moving_average,
  coalesce(nullif(r.segment, ''), 'unknown') as segment_label
from ranked r join cohorts c on c.customer_id = r.customer_id
where r.lifetime > 100 and r.country not in (select country from excluded_countries)
group by r.country, r.segment, c.cohort
having count(*) > 5
order by customers desc, r.country
limit 500`
