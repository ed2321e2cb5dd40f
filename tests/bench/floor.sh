#!/usr/bin/env bash
# floor.sh WAREHOUSE DATES_FILE WEEKS_FILE
# The floor for per-partition runs: the hand loop's transactions (one per
# date, then one per week) in ONE sqlite3 process: no process start-up, no
# connection set-up, no scheduling; only the partitions' own work and one
# commit each.
set -euo pipefail
. "$(dirname "$0")/common.sh"
need_args "$@"
{
  while read -r d; do printf '%s\n' "${FACT_TMPL//@D@/$d}"; done < "$2"
  while read -r w; do printf '%s\n' "${WEEK_TMPL//@D@/$w}"; done < "$3"
} | sqlite3 -bail "$1"
