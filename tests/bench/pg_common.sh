# pg_common.sh - sourced by the PostgreSQL baseline scripts (pg_*.sh): the
# SQL of one partition, as in common.sh but in PostgreSQL's dialect.
#
# The statements are the jobs' SQL of config/postgres/example-postgres.yaml
# (the lesson's fact and weekly mart) with the date spliced in as a user's
# shell script does (pg_bench.py only passes dates it generated,
# YYYY-MM-DD): @D@ is the date (the week's Monday for the mart).  Every
# partition is one transaction, as in backfilld.  The connection comes from
# libpq's environment (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSFILE).

FACT_TMPL="BEGIN;
DELETE FROM fct_daily_sales WHERE dt = '@D@';
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt = '@D@' GROUP BY dt, store_id;
COMMIT;"

WEEK_TMPL="BEGIN;
DELETE FROM mart_weekly_sales WHERE week_start = '@D@';
INSERT INTO mart_weekly_sales (week_start, revenue_usd)
SELECT DATE '@D@', SUM(revenue_usd) FROM fct_daily_sales
WHERE dt >= DATE '@D@' AND dt < DATE '@D@' + 7;
COMMIT;"

PSQL=(psql -X -q -v ON_ERROR_STOP=1)

need_args() {  # need_args DATES_FILE WEEKS_FILE
  if [ "$#" -ne 2 ] || [ ! -f "$1" ] || [ ! -f "$2" ]; then
    echo "usage: $(basename "$0") DATES_FILE WEEKS_FILE (one YYYY-MM-DD a line; connection from PG* variables)" >&2
    exit 2
  fi
}
