#!/usr/bin/env bash
# ch_mutation_loop.sh DATES_FILE WEEKS_FILE
# The mutation loop (a footnote of ch_bench.py: no ClickHouse user writes it; issue 44): per date, one clickhouse-client for
# the mutation ALTER TABLE ... DELETE WHERE dt = ..., clickhouse-client
# polling system.mutations until it is done (back to back, no sleep:
# 18.16 has no mutations_sync), then one clickhouse-client for the INSERT
# ... SELECT; then the same per affected ISO week of the mart.  Readers see
# the partition empty, or old and new rows together, meanwhile.
set -euo pipefail
. "$(dirname "$0")/ch_common.sh"
need_args "$@"

wait_mutations() {  # wait_mutations TABLE
  while [ "$("${CH[@]}" -q "SELECT count() FROM system.mutations
      WHERE database = currentDatabase() AND table = '$1' AND NOT is_done")" != 0 ]; do
    :
  done
}

while read -r d; do
  "${CH[@]}" -q "ALTER TABLE fct_daily_sales DELETE WHERE dt = toDate('$d')"
  wait_mutations fct_daily_sales
  "${CH[@]}" -q "INSERT INTO fct_daily_sales ${FACT_SELECT//@D@/$d}"
done < "$1"
while read -r w; do
  "${CH[@]}" -q "ALTER TABLE mart_weekly_sales DELETE WHERE week_start = toDate('$w')"
  wait_mutations mart_weekly_sales
  "${CH[@]}" -q "INSERT INTO mart_weekly_sales ${WEEK_SELECT//@D@/$w}"
done < "$2"
