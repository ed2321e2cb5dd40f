#!/usr/bin/env bash
# ch_hand_loop.sh DATES_FILE WEEKS_FILE
# The loop a skilled ClickHouse user writes: per date, one clickhouse-client
# --multiquery with ALTER TABLE ... DROP PARTITION of the day and the
# INSERT ... SELECT that rebuilds it; then the same per affected ISO week
# of the mart.  Not atomic: readers see each day empty between its DROP
# and its INSERT, and a failed INSERT leaves it empty.
set -euo pipefail
. "$(dirname "$0")/ch_common.sh"
need_args "$@"

while read -r d; do
  "${CH[@]}" --multiquery -q "ALTER TABLE fct_daily_sales DROP PARTITION '$d';
INSERT INTO fct_daily_sales ${FACT_SELECT//@D@/$d}"
done < "$1"
while read -r w; do
  "${CH[@]}" --multiquery -q "ALTER TABLE mart_weekly_sales DROP PARTITION '$w';
INSERT INTO mart_weekly_sales ${WEEK_SELECT//@D@/$w}"
done < "$2"
