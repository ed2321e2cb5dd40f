# ch_common.sh - sourced by the ClickHouse baseline scripts (ch_*.sh): the
# SQL of one partition and the client, as pg_common.sh is for PostgreSQL.
#
# The SELECTs are the jobs' SQL of config/clickhouse/example-clickhouse.yaml
# (the lesson's fact and weekly mart) with the date spliced in as a user's
# shell script does (ch_bench.py only passes dates it generated,
# YYYY-MM-DD): @D@ is the date (the week's Monday for the mart).  The
# connection (host, native port, user etl, its password, the database)
# comes from the clickhouse-client configuration file CH_CLIENT_CONFIG,
# so that the password is not on a command line.

FACT_SELECT="SELECT dt, store_id, count(), sum(amount_cents)
FROM raw_sales WHERE dt = toDate('@D@') GROUP BY dt, store_id"

WEEK_SELECT="SELECT toDate('@D@'), sum(revenue_cents) FROM fct_daily_sales
WHERE dt >= toDate('@D@') AND dt < toDate('@D@') + 7"

CH=(clickhouse-client --config-file "${CH_CLIENT_CONFIG:?set CH_CLIENT_CONFIG}")

need_args() {  # need_args DATES_FILE WEEKS_FILE
  if [ "$#" -ne 2 ] || [ ! -f "$1" ] || [ ! -f "$2" ]; then
    echo "usage: $(basename "$0") DATES_FILE WEEKS_FILE (one YYYY-MM-DD a line; connection from CH_CLIENT_CONFIG)" >&2
    exit 2
  fi
}
