#!/usr/bin/env bash
# pg_hand_loop.sh DATES_FILE WEEKS_FILE
# The loop a user writes: one psql (one connection) per date, DELETE +
# INSERT in one transaction, then one per affected ISO week of the mart.
set -euo pipefail
. "$(dirname "$0")/pg_common.sh"
need_args "$@"
while read -r d; do
  "${PSQL[@]}" -c "${FACT_TMPL//@D@/$d}"
done < "$1"
while read -r w; do
  "${PSQL[@]}" -c "${WEEK_TMPL//@D@/$w}"
done < "$2"
