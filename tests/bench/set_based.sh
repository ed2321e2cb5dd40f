#!/usr/bin/env bash
# set_based.sh WAREHOUSE DATES_FILE WEEKS_FILE
# The lesson's set-based form: one sqlite3 process, one transaction; the
# dates go into a manifest table and two statements rebuild the fact
# (`WHERE dt IN (SELECT run_date FROM backfill_manifest)`: the JOIN form
# sorts and is slower), then two rebuild exactly the weeks that contain a
# manifest date.  WEEKS_FILE is not read: the weeks come from the manifest.
set -euo pipefail
. "$(dirname "$0")/common.sh"
need_args "$@"
{
  echo "BEGIN IMMEDIATE;"
  echo "CREATE TEMP TABLE backfill_manifest (run_date TEXT PRIMARY KEY);"
  sed "s/.*/INSERT INTO backfill_manifest (run_date) VALUES ('&');/" "$2"
  cat <<'SQL'
DELETE FROM fct_daily_sales WHERE dt IN (SELECT run_date FROM backfill_manifest);
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt IN (SELECT run_date FROM backfill_manifest)
GROUP BY dt, store_id;
CREATE TEMP TABLE backfill_weeks AS
SELECT DISTINCT date(run_date, 'weekday 0', '-6 days') AS week_start FROM backfill_manifest;
DELETE FROM mart_weekly_sales WHERE week_start IN (SELECT week_start FROM backfill_weeks);
INSERT INTO mart_weekly_sales (week_start, revenue_usd)
SELECT w.week_start,
       (SELECT SUM(revenue_usd) FROM fct_daily_sales
        WHERE dt >= w.week_start AND dt < date(w.week_start, '+7 days'))
FROM backfill_weeks w;
COMMIT;
SQL
} | sqlite3 -bail "$1"
