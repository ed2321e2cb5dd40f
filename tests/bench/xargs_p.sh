#!/usr/bin/env bash
# xargs_p.sh WAREHOUSE DATES_FILE WEEKS_FILE   (XARGS_P=2 by default)
# The hand loop under `xargs -P N`: N sqlite3 processes at a time, each
# waiting up to 30 s for the writer lock (.timeout), dates first, then the
# affected weeks once every date has landed.  xargs -I{} puts the date in
# the SQL text itself, as a user's one-liner does.
set -euo pipefail
. "$(dirname "$0")/common.sh"
need_args "$@"
P=${XARGS_P:-2}
xargs -P "$P" -I{} sqlite3 -bail -cmd ".timeout 30000" "$1" "${FACT_TMPL//@D@/{\}}" < "$2"
xargs -P "$P" -I{} sqlite3 -bail -cmd ".timeout 30000" "$1" "${WEEK_TMPL//@D@/{\}}" < "$3"
