#!/usr/bin/env bash
# hand_loop.sh WAREHOUSE DATES_FILE WEEKS_FILE
# The loop a user writes: one sqlite3 process per date (DELETE + INSERT in
# one transaction), then one per affected ISO week of the mart.
set -euo pipefail
. "$(dirname "$0")/common.sh"
need_args "$@"
db=$1
while read -r d; do
  sqlite3 -bail "$db" "${FACT_TMPL//@D@/$d}"
done < "$2"
while read -r w; do
  sqlite3 -bail "$db" "${WEEK_TMPL//@D@/$w}"
done < "$3"
