#!/usr/bin/env bash
# demo.sh - the lessons' backfill, live, on the example configuration.
#
# Seeds a small SQLite warehouse with the sales example (config/demo/sales.sql:
# a fact table whose deploy window 2026-02-08..2026-02-12 was built by code
# that excluded refunds, and weekly/monthly marts built on top of it), starts
# backfilld on config/example.yaml, backfills the window, and shows the fact
# repaired, exactly the two ISO weeks (and the one month) the window touches
# rebuilt, the other weeks unchanged, and a second backfill changing nothing.
#
# It builds nothing: build first (meson setup build && meson compile -C build).
# Needs bash and the sqlite3 command-line shell.
#
# Usage: tools/demo.sh [--build DIR] [--dir DIR]
#   --build DIR  the meson build folder (default: build/ at the top of the tree)
#   --dir DIR    where the demo lives (default: demo/ at the top of the tree);
#                its state/ folder is deleted and created afresh

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
DEMO=$ROOT/demo

die() { echo "demo.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	--build) [ $# -ge 2 ] || die "--build needs a folder"; BUILD=$2; shift 2 ;;
	--dir) [ $# -ge 2 ] || die "--dir needs a folder"; DEMO=$2; shift 2 ;;
	-h|--help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) die "unknown argument '$1' (try --help)" ;;
	esac
done

BACKFILLD=$BUILD/daemon/backfilld
BACKFILLCTL=$BUILD/daemon/backfillctl
[ -x "$BACKFILLD" ] && [ -x "$BACKFILLCTL" ] ||
	die "no binaries in $BUILD/daemon; build first: meson setup build && meson compile -C build"
command -v sqlite3 >/dev/null || die "the sqlite3 shell is missing; install it: apt-get install sqlite3"

mkdir -p "$DEMO"
DEMO=$(cd "$DEMO" && pwd)
CONF=$DEMO/example.yaml
STATE=$DEMO/state
WH=$STATE/sales.db
LOG=$DEMO/backfilld.log
WINDOW_FROM=2026-02-08
WINDOW_TO=2026-02-12

ctl() { "$BACKFILLCTL" --config "$CONF" "$@"; }
q() { sqlite3 -box "$WH" "$@"; }
say() { printf '\n== %s\n\n' "$*"; }
# A checksum of every table in the warehouse (schema and rows, in any row
# order) but the daemon's own backfilld_commits, where each request adds its
# rows (docs/guarantees.md, "Tables in your warehouse").
wh_sum() { sqlite3 "$WH" .dump | grep -v backfilld_commits | LC_ALL=C sort | cksum; }

if [ -S "$STATE/backfilld.sock" ] && [ -f "$CONF" ] && ctl status >/dev/null 2>&1; then
	die "a daemon already serves $STATE/backfilld.sock; stop it first (backfillctl --config $CONF status)"
fi

# A fresh demo: the example configuration and a newly seeded warehouse.
rm -rf "$STATE"
mkdir -p "$STATE"
cp "$ROOT/config/example.yaml" "$CONF"
sqlite3 "$WH" < "$ROOT/config/demo/sales.sql"
sqlite3 "$WH" ".backup '$STATE/before.db'"

say "The warehouse before the backfill ($WH)"
echo "The fact table excludes refunds for $WINDOW_FROM..${WINDOW_TO#2026-02-}: its totals for those days"
echo "disagree with raw_sales, the truth."
echo
q "SELECT f.dt, f.sales AS fact_sales, printf('%.2f', f.revenue_usd) AS fact_revenue,
          r.sales AS raw_sales, printf('%.2f', r.revenue_usd) AS raw_revenue,
          CASE WHEN round(f.revenue_usd, 2) = round(r.revenue_usd, 2) THEN 'ok'
               ELSE 'WRONG' END AS fact
   FROM (SELECT dt, SUM(sales) AS sales, SUM(revenue_usd) AS revenue_usd
         FROM fct_daily_sales GROUP BY dt) f
   JOIN (SELECT dt, COUNT(*) AS sales, SUM(amount_usd) AS revenue_usd
         FROM raw_sales GROUP BY dt) r USING (dt)
   WHERE dt BETWEEN date('$WINDOW_FROM', '-1 day') AND date('$WINDOW_TO', '+1 day')
   ORDER BY dt"
echo
echo "The weekly mart shows the same wrong totals for the two ISO weeks the window"
echo "straddles ($WINDOW_FROM is a Sunday), and the monthly rollup for February:"
echo
q "SELECT w.week_start, printf('%.2f', w.revenue_usd) AS mart_revenue,
          printf('%.2f', (SELECT SUM(amount_usd) FROM raw_sales
                          WHERE dt >= w.week_start AND dt < date(w.week_start, '+7 days'))) AS from_raw,
          CASE WHEN round(w.revenue_usd, 2) = round((SELECT SUM(amount_usd) FROM raw_sales
                          WHERE dt >= w.week_start AND dt < date(w.week_start, '+7 days')), 2)
               THEN 'ok' ELSE 'WRONG' END AS mart
   FROM mart_weekly_sales w ORDER BY w.week_start"
q "SELECT m.month_start, printf('%.2f', m.revenue_usd) AS mart_revenue,
          printf('%.2f', (SELECT SUM(amount_usd) FROM raw_sales
                          WHERE dt >= m.month_start AND dt < date(m.month_start, '+1 month'))) AS from_raw,
          CASE WHEN round(m.revenue_usd, 2) = round((SELECT SUM(amount_usd) FROM raw_sales
                          WHERE dt >= m.month_start AND dt < date(m.month_start, '+1 month')), 2)
               THEN 'ok' ELSE 'WRONG' END AS mart
   FROM mart_monthly_sales m ORDER BY m.month_start"

say "Starting backfilld --config $CONF (log: $LOG)"
"$BACKFILLD" --config "$CONF" 2>"$LOG" &
DAEMON_PID=$!
stop_daemon() {
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -TERM "$DAEMON_PID"
		wait "$DAEMON_PID" || true
	fi
}
trap stop_daemon EXIT

# Wait until the control socket answers (bounded: 10 s).
ready=0
for _ in $(seq 100); do
	if ctl status >/dev/null 2>&1; then ready=1; break; fi
	kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$LOG" >&2; die "backfilld exited; its log is above"; }
	sleep 0.1
done
[ "$ready" = 1 ] || { cat "$LOG" >&2; die "backfilld did not answer on its socket within 10 s"; }
echo "backfilld is running (pid $DAEMON_PID)."

say "The plan: backfillctl backfill fct_daily_sales --from $WINDOW_FROM --to $WINDOW_TO --dry-run"
ctl backfill fct_daily_sales --from "$WINDOW_FROM" --to "$WINDOW_TO" --reason "refund bug" --dry-run

say "The backfill: backfillctl backfill fct_daily_sales --from $WINDOW_FROM --to $WINDOW_TO --wait"
# Shown as it runs and kept, for the request id it prints ("request N: ...";
# the schedule may have made requests of its own before it).
ctl backfill fct_daily_sales --from "$WINDOW_FROM" --to "$WINDOW_TO" --reason "refund bug" --wait |
	tee "$STATE/backfill.out"
REQUEST=$(sed -n 's/^request \([0-9][0-9]*\): .*/\1/p' "$STATE/backfill.out" | head -n 1)
[ -n "$REQUEST" ] || die "the backfill printed no request id; see $STATE/backfill.out"

say "After: the fact table agrees with raw_sales"
q "SELECT f.dt, f.sales AS fact_sales, printf('%.2f', f.revenue_usd) AS fact_revenue,
          r.sales AS raw_sales, printf('%.2f', r.revenue_usd) AS raw_revenue,
          CASE WHEN round(f.revenue_usd, 2) = round(r.revenue_usd, 2) THEN 'ok'
               ELSE 'WRONG' END AS fact
   FROM (SELECT dt, SUM(sales) AS sales, SUM(revenue_usd) AS revenue_usd
         FROM fct_daily_sales GROUP BY dt) f
   JOIN (SELECT dt, COUNT(*) AS sales, SUM(amount_usd) AS revenue_usd
         FROM raw_sales GROUP BY dt) r USING (dt)
   WHERE dt BETWEEN date('$WINDOW_FROM', '-1 day') AND date('$WINDOW_TO', '+1 day')
   ORDER BY dt"
sqlite3 "$WH" "ATTACH '$STATE/before.db' AS b;
   SELECT 'fact rows outside the window that changed: ' || COUNT(*) FROM (
     SELECT * FROM main.fct_daily_sales WHERE dt NOT BETWEEN '$WINDOW_FROM' AND '$WINDOW_TO'
     EXCEPT SELECT * FROM b.fct_daily_sales WHERE dt NOT BETWEEN '$WINDOW_FROM' AND '$WINDOW_TO')"

say "After: exactly the weeks and the month the window touches were rebuilt"
q "ATTACH '$STATE/before.db' AS b;
   SELECT w.week_start, printf('%.2f', o.revenue_usd) AS before, printf('%.2f', w.revenue_usd) AS after,
          CASE WHEN w.revenue_usd IS o.revenue_usd THEN 'unchanged' ELSE 'rebuilt' END AS change
   FROM main.mart_weekly_sales w JOIN b.mart_weekly_sales o USING (week_start)
   ORDER BY w.week_start"
q "ATTACH '$STATE/before.db' AS b;
   SELECT m.month_start, printf('%.2f', o.revenue_usd) AS before, printf('%.2f', m.revenue_usd) AS after,
          CASE WHEN m.revenue_usd IS o.revenue_usd THEN 'unchanged' ELSE 'rebuilt' END AS change
   FROM main.mart_monthly_sales m JOIN b.mart_monthly_sales o USING (month_start)
   ORDER BY m.month_start"

say "The audit of that request: backfillctl audit --request $REQUEST"
echo "What each partition's run measured before and after its write, inside its"
echo "transaction, and every check's outcome (the refunds lower each day's revenue):"
echo
ctl audit --request "$REQUEST"

say "The same backfill again changes nothing (idempotent partition writes)"
sum_before=$(wh_sum)
ctl backfill fct_daily_sales --from "$WINDOW_FROM" --to "$WINDOW_TO" --reason "refund bug, again" --wait
sum_after=$(wh_sum)
echo
echo "warehouse checksum before the second backfill: $sum_before"
echo "warehouse checksum after it:                   $sum_after"
[ "$sum_before" = "$sum_after" ] || die "the second backfill changed the warehouse"
echo "unchanged."

say "backfillctl runs --limit 12"
ctl runs --limit 12

say "backfillctl status"
ctl status

say "Stopping backfilld (SIGTERM)"
trap - EXIT
kill -TERM "$DAEMON_PID"
rc=0
wait "$DAEMON_PID" || rc=$?
[ "$rc" = 0 ] || die "backfilld exited with status $rc; see $LOG"
echo "backfilld exited 0.  The demo is in $DEMO; run it again with tools/demo.sh."
