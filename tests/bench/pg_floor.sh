#!/usr/bin/env bash
# pg_floor.sh DATES_FILE WEEKS_FILE
# The floor for per-partition runs: the hand loop's transactions (one per
# date, then one per week) in ONE psql session: no process start-up, no
# connection set-up, no scheduling; only the partitions' work and a commit
# each, one after the other.
set -euo pipefail
. "$(dirname "$0")/pg_common.sh"
need_args "$@"
{
  while read -r d; do printf '%s\n' "${FACT_TMPL//@D@/$d}"; done < "$1"
  while read -r w; do printf '%s\n' "${WEEK_TMPL//@D@/$w}"; done < "$2"
} | "${PSQL[@]}" -f -
