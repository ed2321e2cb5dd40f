#!/usr/bin/env bash
# pg_set_based.sh DATES_FILE WEEKS_FILE
# The lesson's set-based form: one psql, one transaction; the dates go into
# a temporary manifest table and two statements rebuild the fact, then two
# rebuild exactly the weeks that contain a manifest date.  WEEKS_FILE is
# not read: the weeks come from the manifest.
set -euo pipefail
. "$(dirname "$0")/pg_common.sh"
need_args "$@"
{
  echo "BEGIN;"
  echo "CREATE TEMP TABLE backfill_manifest (run_date date PRIMARY KEY) ON COMMIT DROP;"
  echo "INSERT INTO backfill_manifest (run_date) VALUES"
  sed "s/.*/('&'),/; \$s/,\$/;/" "$1"
  cat <<'SQL'
ANALYZE backfill_manifest;  -- so the planner knows how many dates
DELETE FROM fct_daily_sales WHERE dt IN (SELECT run_date FROM backfill_manifest);
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt IN (SELECT run_date FROM backfill_manifest)
GROUP BY dt, store_id;
CREATE TEMP TABLE backfill_weeks ON COMMIT DROP AS
SELECT DISTINCT date_trunc('week', run_date)::date AS week_start FROM backfill_manifest;
DELETE FROM mart_weekly_sales WHERE week_start IN (SELECT week_start FROM backfill_weeks);
INSERT INTO mart_weekly_sales (week_start, revenue_usd)
SELECT w.week_start,
       (SELECT SUM(revenue_usd) FROM fct_daily_sales
        WHERE dt >= w.week_start AND dt < w.week_start + 7)
FROM backfill_weeks w;
COMMIT;
SQL
} | "${PSQL[@]}" -f -
