#!/usr/bin/env bash
# ch_set_drop.sh DATES_FILE WEEKS_FILE
# The set-based form a skilled ClickHouse user writes when readers may see
# the range empty: one clickhouse-client --multiquery; one ALTER TABLE ...
# DROP PARTITION of every date of the range, then ONE INSERT ... SELECT of
# the whole range; then the same for the affected weeks (from the rebuilt
# fact).  Not atomic: the range is empty between the ALTER and the end of
# the INSERT, and a failed INSERT leaves it empty or half written.
set -euo pipefail
. "$(dirname "$0")/ch_common.sh"
need_args "$@"
dates=$(sed "s/.*/toDate('&')/" "$1" | paste -sd, -)
{
  echo "ALTER TABLE fct_daily_sales $(sed "s/.*/DROP PARTITION '&'/" "$1" | paste -sd, -);"
  cat <<SQL
INSERT INTO fct_daily_sales SELECT dt, store_id, count(), sum(amount_cents)
FROM raw_sales WHERE dt IN ($dates) GROUP BY dt, store_id;
SQL
  echo "ALTER TABLE mart_weekly_sales $(sed "s/.*/DROP PARTITION '&'/" "$2" | paste -sd, -);"
  cat <<SQL
INSERT INTO mart_weekly_sales SELECT toMonday(dt) AS week_start, sum(revenue_cents)
FROM fct_daily_sales WHERE toMonday(dt) IN (SELECT toMonday(d) FROM (SELECT arrayJoin([$dates]) AS d))
GROUP BY week_start;
SQL
} | "${CH[@]}" --multiquery
