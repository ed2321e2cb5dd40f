# common.sh - sourced by the baseline scripts: the SQL of one partition.
#
# The statements are the jobs' SQL of config/example.yaml (the lesson's
# fact and weekly mart), with the date spliced in as a user's shell script
# does (the runner only passes dates it generated, YYYY-MM-DD): @D@ in the
# templates is the date (the week's Monday for the mart).  Every partition
# is one transaction, BEGIN IMMEDIATE as in backfilld, so that a partition
# is rebuilt whole or not at all.

FACT_TMPL="BEGIN IMMEDIATE;
DELETE FROM fct_daily_sales WHERE dt = '@D@';
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt = '@D@' GROUP BY dt, store_id;
COMMIT;"

WEEK_TMPL="BEGIN IMMEDIATE;
DELETE FROM mart_weekly_sales WHERE week_start = '@D@';
INSERT INTO mart_weekly_sales (week_start, revenue_usd)
SELECT '@D@', SUM(revenue_usd) FROM fct_daily_sales
WHERE dt >= '@D@' AND dt < date('@D@', '+7 days');
COMMIT;"

need_args() {  # need_args WAREHOUSE DATES_FILE WEEKS_FILE
  if [ "$#" -ne 3 ] || [ ! -f "$1" ] || [ ! -f "$2" ] || [ ! -f "$3" ]; then
    echo "usage: $(basename "$0") WAREHOUSE.db DATES_FILE WEEKS_FILE (one YYYY-MM-DD a line)" >&2
    exit 2
  fi
}
