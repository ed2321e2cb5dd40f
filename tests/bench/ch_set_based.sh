#!/usr/bin/env bash
# ch_set_based.sh DATES_FILE WEEKS_FILE
# The set-based form on ClickHouse, write-audit-publish by hand: one
# clickhouse-client --multiquery; a stage table like the fact, ONE
# INSERT ... SELECT of every date of the manifest into it, then one
# ALTER TABLE ... REPLACE PARTITION per date; then the same for the weeks
# (one INSERT ... SELECT of every affected week from the rebuilt fact, one
# REPLACE PARTITION per week); the stages are dropped at the end.  No
# checks: the set-based script trusts its SELECT.
set -euo pipefail
. "$(dirname "$0")/ch_common.sh"
need_args "$@"
dates=$(sed "s/.*/toDate('&')/" "$1" | paste -sd, -)
{
  cat <<SQL
DROP TABLE IF EXISTS bench_stage_fct;
CREATE TABLE bench_stage_fct AS fct_daily_sales;
INSERT INTO bench_stage_fct SELECT dt, store_id, count(), sum(amount_cents)
FROM raw_sales WHERE dt IN ($dates) GROUP BY dt, store_id;
SQL
  sed "s/.*/ALTER TABLE fct_daily_sales REPLACE PARTITION '&' FROM bench_stage_fct;/" "$1"
  cat <<SQL
DROP TABLE IF EXISTS bench_stage_mart;
CREATE TABLE bench_stage_mart AS mart_weekly_sales;
INSERT INTO bench_stage_mart SELECT toMonday(dt) AS week_start, sum(revenue_cents)
FROM fct_daily_sales WHERE toMonday(dt) IN (SELECT toMonday(d) FROM (SELECT arrayJoin([$dates]) AS d))
GROUP BY week_start;
SQL
  sed "s/.*/ALTER TABLE mart_weekly_sales REPLACE PARTITION '&' FROM bench_stage_mart;/" "$2"
  echo "DROP TABLE bench_stage_fct;"
  echo "DROP TABLE bench_stage_mart;"
} | "${CH[@]}" --multiquery
