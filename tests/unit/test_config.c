/*
 * test_config.c - the configuration loader: one fixture per refused file
 * (tests/fixtures/config/bad-*.yaml) asserting the exact one-line message
 * and position, inline cases through config_load_string, and a full valid
 * configuration (shaped like config/example.yaml, a warehouse of each
 * kind) asserting every loaded value, default, resolved path and derived
 * index.  The key tables themselves (config_int.h): every key refused
 * with its table's wording when its value has the wrong shape, suggested
 * by its own table when misspelt, and documented in backfilld.yaml(5).
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config_int.h"

#define FX FIXTURES_DIR "/config/"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* Load text as `path`, asserting success. */
static struct config *
load_ok_at(const char *path, const char *text)
{
	struct config *cfg = NULL;
	struct err err = { 0 };
	int rc = config_load_string(path, text, strlen(text), &cfg, &err);

	ck_assert_msg(rc == 0, "unexpected error: %s", err.msg);
	ck_assert_ptr_nonnull(cfg);
	return cfg;
}

/* Load text as /srv/bf/conf/backfilld.yaml, asserting success. */
static struct config *
load_ok(const char *text)
{
	return load_ok_at("/srv/bf/conf/backfilld.yaml", text);
}

/* Load text as inline.yaml, asserting failure with exactly `msg`. */
static void
load_bad(const char *text, const char *msg)
{
	struct config *cfg = (struct config *)1;
	struct err err = { 0 };
	int rc = config_load_string("inline.yaml", text, strlen(text), &cfg,
				    &err);

	ck_assert_int_eq(rc, -1);
	ck_assert_ptr_null(cfg);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, msg);
}

/* Day number of a civil date. */
static int64_t
day(int y, int m, int d)
{
	return cal_days_from_civil(y, m, d);
}

/* ------------------------------------------------------------------ */
/* Refused fixtures                                                    */
/* ------------------------------------------------------------------ */

struct bad_fixture {
	const char *file;
	const char *msg; /* after "FILE:" */
};

static const struct bad_fixture bad_fixtures[] = {
	{ "bad-syntax.yaml",
	  "7:4: invalid YAML: did not find expected '-' indicator (while parsing a block collection at line 5)" },
	{ "bad-nesting.yaml",
	  "3:67: nesting deeper than 64 levels" },
	{ "bad-empty.yaml",
	  "1:1: the configuration is empty: expected a mapping with warehouses: and jobs:" },
	{ "bad-comments-only.yaml",
	  "1:1: the configuration is empty: expected a mapping with warehouses: and jobs:" },
	{ "bad-top-sequence.yaml",
	  "1:1: the top level must be a mapping of settings (state_db:, warehouses:, jobs:, ...), got a sequence" },
	{ "bad-second-document.yaml",
	  "2:1: a second YAML document; the configuration is one document" },
	{ "bad-unknown-key.yaml",
	  "7:5: unknown key \"concurency\" in job \"x\"; did you mean \"concurrency\"?" },
	{ "bad-unknown-top-key.yaml",
	  "2:1: unknown key \"jbos\" at the top level; did you mean \"jobs\"?" },
	{ "bad-unknown-key-nosuggest.yaml",
	  "9:5: unknown key \"colour\" in job \"x\"" },
	{ "bad-int.yaml",
	  "2:18: max_concurrency must be a positive integer, got \"four\"" },
	{ "bad-int-sequence.yaml",
	  "1:18: max_concurrency must be a positive integer, got a sequence" },
	{ "bad-bool.yaml",
	  "8:14: job \"x\": catchup must be true or false, got \"yes\"" },
	/* a quoted scalar is a string, not a number or a boolean */
	{ "bad-quoted-int.yaml",
	  "8:12: job \"x\": batch must be true, false or a number of partitions per run of at least 2, got \"3\", a quoted string: write the value without quotes" },
	{ "bad-quoted-bool.yaml",
	  "8:14: job \"x\": catchup must be true or false, got \"true\", a quoted string: write the value without quotes" },
	{ "bad-quoted-setting.yaml",
	  "1:18: max_concurrency must be a positive integer, got \"4\", a quoted string: write the value without quotes" },
	/* numbers are decimal only, in every numeric key */
	{ "bad-int-hex.yaml",
	  "1:18: max_concurrency must be a positive integer, got \"0x4\": write numbers in decimal (16, not 0x10 or 020)" },
	{ "bad-int-octal.yaml",
	  "9:18: job \"x\": concurrency must be a positive integer, got \"010\": write numbers in decimal (16, not 0x10 or 020)" },
	{ "bad-tolerance-hex.yaml",
	  "13:20: reconcile \"r\" of job \"x\": tolerance must be a percentage like 0.1% or a non-negative number, got \"0x10\": write numbers in decimal (16, not 0x10 or 020)" },
	{ "bad-max-change-hex.yaml",
	  "12:21: metric \"rows\" of job \"x\": max_change must be a percentage like 50%, got \"0x10%\": write numbers in decimal (16, not 0x10 or 020)" },
	{ "bad-sigma-inf.yaml",
	  "12:38: metric \"rows\" of job \"x\": max_sigma must be a positive number like 3, got \"inf\"" },
	/* a NUL byte in a scalar: refused, the whole value shown escaped */
	{ "bad-nul-severity.yaml",
	  "12:19: \"severity\" holds a NUL byte: \"warn\\x00\"; remove it" },
	{ "bad-nul-name.yaml",
	  "5:11: \"name\" holds a NUL byte: \"ab\\x00cd\"; remove it" },
	{ "bad-duplicate-key.yaml",
	  "9:5: duplicate key \"partition\" in job \"x\" (first at line 7); keep one" },
	{ "bad-duplicate-top-key.yaml",
	  "3:1: duplicate key \"max_catchup\" (first at line 1); keep one" },
	{ "bad-duplicate-job.yaml",
	  "9:11: duplicate job name \"x\" (first at line 5); job names must be unique" },
	{ "bad-duplicate-warehouse.yaml",
	  "4:11: duplicate warehouse name \"sales\" (first at line 2); warehouse names must be unique" },
	{ "bad-unknown-warehouse.yaml",
	  "6:16: job \"x\": unknown warehouse \"salse\"; warehouses are: sales" },
	{ "bad-unknown-upstream.yaml",
	  "12:16: job \"mart\": unknown upstream job \"fct_daly\"; did you mean \"fct_daily\"?" },
	{ "bad-cycle.yaml",
	  "14:9: upstream cycle a -> b -> a (each job lists the next in upstream); remove one of these entries" },
	{ "bad-cycle-three.yaml",
	  "13:16: upstream cycle a -> c -> b -> a (each job lists the next in upstream); remove one of these entries" },
	{ "bad-concurrency.yaml",
	  "9:18: job \"x\": concurrency 3 is above max_concurrency 2; lower it or raise max_concurrency" },
	{ "bad-start-after-end.yaml",
	  "9:10: job \"x\": end 2026-02-28 is before start 2026-03-01" },
	{ "bad-ready-after.yaml",
	  "8:18: job \"x\": ready_after must be a duration like 30s, 15m, 2h or 1d, got \"2 hours\"" },
	{ "bad-timeout.yaml",
	  "8:14: job \"x\": timeout must be a duration like 30s, 15m, 2h or 1d (0s: none), got \"15\"" },
	{ "bad-max-catchup.yaml",
	  "1:14: max_catchup must be a positive integer, got \"0\"" },
	{ "bad-max-backfill.yaml",
	  "8:19: job \"x\": max_backfill must be a positive integer, got \"-5\"" },
	{ "bad-keep-runs-short.yaml",
	  "1:12: keep_runs must be a duration of at least 1h, like 30d or 365d, got \"30m\"" },
	{ "bad-keep-runs.yaml",
	  "8:16: job \"x\": keep_runs must be a duration of at least 1h, like 30d or 365d, got \"a year\"" },
	{ "bad-retries.yaml",
	  "8:14: job \"x\": retries must be a non-negative integer, got \"-1\"" },
	{ "bad-no-kind.yaml",
	  "5:5: job \"x\" needs one of sql:, sql_file: or command:" },
	{ "bad-two-kinds.yaml",
	  "9:5: job \"x\": sql and command are exclusive; keep one" },
	{ "bad-sql-no-warehouse.yaml",
	  "5:5: job \"x\" runs SQL but names no warehouse: add warehouse: NAME (warehouses are: sales)" },
	{ "bad-command-string.yaml",
	  "4:14: job \"export\": command must be a non-empty sequence of strings (argv, no shell), got \"/usr/local/bin/export --date {partition}\"" },
	{ "bad-command-empty.yaml",
	  "4:14: job \"export\": command must be a non-empty sequence of strings (argv, no shell), got an empty sequence" },
	{ "bad-command-item.yaml",
	  "6:9: job \"export\": command must be a non-empty sequence of strings (argv, no shell), got a mapping" },
	{ "bad-check-no-sql.yaml",
	  "10:9: check \"has_rows\" of job \"x\" needs sql:" },
	{ "bad-jobs-mapping.yaml",
	  "2:3: jobs must be a sequence of jobs, got a mapping" },
	{ "bad-job-not-mapping.yaml",
	  "2:5: each job must be a mapping with name:, partition: and sql:, sql_file: or command:, got \"fct_daily_sales\"" },
	{ "bad-job-no-name.yaml",
	  "2:5: job 1 has no name: every job needs name: NAME" },
	{ "bad-job-name.yaml",
	  "2:11: job name \"fct daily\" must be 1 to 64 letters, digits, '_', '-' or '.', not starting with '-' or '.'" },
	{ "bad-wall-clock.yaml",
	  "11:50: job \"x\" reads the wall clock (CURRENT_DATE): take the date from :partition, or set allow_wall_clock: true" },
	{ "bad-wall-clock-now.yaml",
	  "11:47: job \"x\" check \"fresh\" reads the wall clock ('now'): take the date from :partition, or set allow_wall_clock: true" },
	{ "bad-txn-commit.yaml",
	  "12:9: job \"x\" statement 3 controls the run's transaction (COMMIT): backfilld begins and commits each partition's transaction itself; remove it (to nest one, use SAVEPOINT name ... RELEASE name)" },
	{ "bad-txn-check.yaml",
	  "11:14: job \"x\" check \"undo\" statement 1 controls the run's transaction (ROLLBACK): backfilld begins and commits each partition's transaction itself; remove it (to nest one, use SAVEPOINT name ... RELEASE name)" },
	{ "bad-txn-metric.yaml",
	  "12:31: job \"x\" metric \"rows\" statement 2 controls the run's transaction (ATTACH): backfilld begins and commits each partition's transaction itself; remove it (to nest one, use SAVEPOINT name ... RELEASE name)" },
	{ "bad-txn-late-data.yaml",
	  "10:12: job \"x\" late_data statement 1 controls the run's transaction (PRAGMA wal_checkpoint): backfilld begins and commits each partition's transaction itself; remove it (to nest one, use SAVEPOINT name ... RELEASE name)" },
	{ "bad-txn-pg.yaml",
	  "10:41: job \"x\" statement 4 controls the run's transaction (COMMIT AND CHAIN): backfilld begins and commits each partition's transaction itself; remove it (to nest one, use SAVEPOINT name ... RELEASE name)" },
	{ "bad-partition-missing.yaml",
	  "5:5: job \"x\" needs partition: hour, day, week, month, quarter, year or none" },
	{ "bad-partition-value.yaml",
	  "7:16: job \"x\": partition must be one of hour, day, week, month, quarter, year, none, got \"daily\"" },
	{ "bad-none-no-upstream.yaml",
	  "6:16: job \"x\": partition: none needs upstream: a whole table has no schedule of its own and is rebuilt when the jobs it reads land; name them in upstream:" },
	{ "bad-none-feeds-day.yaml",
	  "14:16: job \"y\": upstream \"w\" has partition: none (one whole table) and feeds only jobs with partition: none; remove the entry or make \"y\" partition: none" },
	{ "bad-clickhouse-zoned-hours.yaml",
	  "8:15: job \"hourly_events\": partition: hour in timezone Asia/Kolkata is not supported on a clickhouse warehouse: the zone has offsets that are not whole hours since 1970 (start: narrows that), so its hours do not start on the UTC hours toStartOfHour partitions by; write partition: day (or longer) in that zone, or timezone: UTC for its hours" },
	{ "bad-timezone.yaml",
	  "8:15: job \"x\": timezone: unknown time zone \"Europe/Berln\"; did you mean \"Europe/Berlin\"?" },
	{ "bad-week-start.yaml",
	  "8:5: job \"x\": week_start is for partition: week; this job's partitions are months" },
	{ "bad-sql-file-missing.yaml",
	  "8:5: job \"x\": cannot read sql_file \"jobs/missing.sql\" (" FX "jobs/missing.sql): No such file or directory" },
	{ "bad-log-level.yaml",
	  "1:12: log_level must be one of err, warning, notice, info, debug, got \"verbose\"" },
	{ "bad-warehouse-both.yaml",
	  "4:5: warehouse \"dw\": sqlite, postgres and clickhouse are exclusive; keep one" },
	{ "bad-warehouse-none.yaml",
	  "2:5: warehouse \"dw\" needs sqlite: PATH, postgres: CONNINFO or clickhouse: URL" },
	{ "bad-max-change.yaml",
	  "12:52: metric \"revenue\" of job \"x\": max_change must be a percentage like 50%, got \"fifty\"" },
	{ "bad-date.yaml",
	  "8:12: job \"x\": start must be a date YYYY-MM-DD, got \"2026-02-30\"" },
	{ "bad-verify-no-table.yaml",
	  "9:13: job \"x\": verify: true needs a SQL job with table: and partition_column: (the partition it compares)" },
	{ "bad-throttle-no-max.yaml",
	  "5:7: throttle of warehouse \"dw\" needs max:" },
	{ "bad-throttle-critical.yaml",
	  "7:17: throttle of warehouse \"dw\": critical 5 is below max 10; raise it (or drop it)" },
	{ "bad-throttle-max.yaml",
	  "4:36: throttle of warehouse \"dw\": max must be a number, got \"ten\"" },
	{ "bad-on-throttle-alone.yaml",
	  "4:5: warehouse \"dw\": on_throttle needs throttle: (the query whose value it reports)" },
	{ "bad-throttle-every.yaml",
	  "4:46: throttle of warehouse \"dw\": every must be a positive duration like 5s, 1m, got \"0s\"" },
	{ "bad-verify-command.yaml",
	  "8:13: job \"x\": verify must be true or false, got \"yes please\"" },
	{ "bad-deadline.yaml",
	  "6:15: job \"x\": deadline must be a positive duration like 30s, 15m, 2h or 1d, got \"soon\"" },
	{ "bad-deadline-no-schedule.yaml",
	  "5:5: job \"x\": deadline needs a schedule: add start: (a clock-driven job) or upstream: (a downstream job)" },
	{ "bad-hook-placeholder.yaml",
	  "6:50: job \"x\": on_failure: unknown placeholder \"{date}\"; use {job}, {partition}, {request} or {error}" },
	{ "bad-hook-string.yaml",
	  "6:17: job \"x\": on_failure must be a command: a sequence of strings, program first, got \"/usr/local/bin/page {job}\"" },
	{ "bad-on-late-no-deadline.yaml",
	  "6:5: job \"x\": on_late needs deadline: (how long after a partition is due it is late)" },
	{ "bad-on-refused-downstream.yaml",
	  "10:5: job \"b\": on_refused needs a clock schedule with catchup (start: and no upstream:)" },
	{ "bad-metrics-file.yaml",
	  "1:15: metrics_file must be a file path, got a sequence" },
	{ "bad-report-file.yaml",
	  "1:13: report_file must be a file path, got nothing" },
	{ "bad-http-listen.yaml",
	  "1:14: http_listen must be PORT, IPV4:PORT or [IPV6]:PORT with a numeric address, for example 127.0.0.1:9187, got \"localhost:9187\"" },
	{ "bad-http-listen-port.yaml",
	  "2:14: the port of http_listen must be a number from 0 to 65535, got \"127.0.0.1:99999\"" },
	{ "bad-hook-timeout.yaml",
	  "1:15: hook_timeout must be a positive duration like 30s, 15m, 2h or 1d, got \"0s\"" },
};

#define NBAD (int)(sizeof bad_fixtures / sizeof bad_fixtures[0])

/* Each bad fixture is refused with exactly its message and position. */
START_TEST(test_bad_fixture)
{
	const struct bad_fixture *f = &bad_fixtures[_i];
	char path[PATH_MAX], want[PATH_MAX + ERR_MSG_MAX];
	struct config *cfg = (struct config *)1;
	struct err err = { 0 };

	snprintf(path, sizeof path, "%s%s", FX, f->file);
	snprintf(want, sizeof want, "%s:%s", path, f->msg);
	ck_assert_int_eq(config_load(path, &cfg, &err), -1);
	ck_assert_ptr_null(cfg);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, want);
	ck_assert_ptr_null(strchr(err.msg, '\n'));
}
END_TEST

/* The exact message of one fixture, spelled out in full. */
START_TEST(test_bad_unknown_key_full)
{
	struct config *cfg;
	struct err err;

	ck_assert_int_eq(config_load(FX "bad-unknown-key.yaml", &cfg, &err), -1);
	ck_assert_str_eq(err.msg, FX "bad-unknown-key.yaml:7:5: unknown key \"concurency\" in job \"x\"; did you mean \"concurrency\"?");
}
END_TEST

/* A missing file: named, with strerror, exit code 2. */
START_TEST(test_unreadable)
{
	struct config *cfg = (struct config *)1;
	struct err err;

	ck_assert_int_eq(config_load(FX "no-such-file.yaml", &cfg, &err), -1);
	ck_assert_ptr_null(cfg);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, FX "no-such-file.yaml: cannot read the configuration: No such file or directory");
	ck_assert_int_eq(config_load(FIXTURES_DIR, &cfg, &err), -1);
	ck_assert_str_eq(err.msg, FIXTURES_DIR ": cannot read the configuration: Is a directory");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Refused inline cases                                                */
/* ------------------------------------------------------------------ */

#define WH "warehouses:\n  - name: sales\n    sqlite: sales.db\njobs:\n"
/* a SQL job "x" on line 5, its body from line 8 */
/* A job on a ClickHouse warehouse, lines 1-7. */
#define CHX "warehouses:\n  - name: c\n    clickhouse: http://127.0.0.1:8123/\n" \
	"jobs:\n  - name: x\n    warehouse: c\n    partition: day\n"
#define JX WH "  - name: x\n    warehouse: sales\n    partition: day\n"

struct bad_inline {
	const char *yaml;
	const char *msg;
};

/* A job "x" on SQLite warehouse sales reconciling against PostgreSQL
 * warehouse landing: its reconcile's items from line 12. */
#define RX "warehouses:\n  - name: sales\n    sqlite: sales.db\n" \
	"  - name: landing\n    postgres: \"dbname=x\"\njobs:\n" \
	"  - name: x\n    warehouse: sales\n    partition: day\n" \
	"    sql: SELECT 1\n    reconcile:\n"

static const struct bad_inline bad_inlines[] = {
	{ JX "    upstream: [x]\n    sql: SELECT 1\n",
	  "inline.yaml:8:16: job \"x\" lists itself in upstream without a lookback: a partition cannot wait for itself; write {job: x, lookback: 1} (a running total reading its previous partition), or remove the entry" },
	{ JX "    upstream: [{job: x, lookback: 0}]\n    sql: SELECT 1\n",
	  "inline.yaml:8:16: job \"x\" lists itself in upstream without a lookback: a partition cannot wait for itself; write {job: x, lookback: 1} (a running total reading its previous partition), or remove the entry" },
	{ JX "    upstream: [{job: x, lookback: 1}, {job: x, lookback: 2}]\n    sql: SELECT 1\n",
	  "inline.yaml:8:39: job \"x\" lists itself in upstream twice; keep one" },
	{ JX "    sql: SELECT 1\n  - name: y\n    warehouse: sales\n    partition: week\n    upstream: [x, x]\n    sql: SELECT 1\n",
	  "inline.yaml:12:19: job \"y\" lists upstream \"x\" twice; keep one" },
	{ JX "    sql: SELECT 1\n    late_data:\n      sql: SELECT dt FROM raw WHERE loaded_at > :since\n",
	  "inline.yaml:10:7: late_data of job \"x\" needs every:" },
	{ JX "    sql: SELECT 1\n    late_data: {sql: SELECT 1, every: 0s}\n",
	  "inline.yaml:9:39: late_data of job \"x\": every must be a positive duration like 30s, 15m, 2h or 1d, got \"0s\"" },
	{ JX "    sql: SELECT 1\n    table: t\n    metrics:\n      revenue: SUM(x)\n",
	  "inline.yaml:10:5: job \"x\": metrics needs table: and partition_column:" },
	{ JX "    sql: SELECT 1\n    partition_column: dt\n",
	  "inline.yaml:9:5: job \"x\": partition_column needs table:" },
	{ "jobs:\n  - name: e\n    partition: day\n    command: [/bin/true]\n    batch: true\n",
	  "inline.yaml:5:12: job \"e\": batch: true needs a SQL job (sql: or sql_file:)" },
	{ "jobs:\n  - name: e\n    partition: day\n    command: [/bin/true]\n    batch: 4\n",
	  "inline.yaml:5:12: job \"e\": batch: 4 needs a SQL job (sql: or sql_file:)" },
	{ JX "    sql: SELECT 1\n    batch: 1\n",
	  "inline.yaml:9:12: job \"x\": batch must be true, false or a number of partitions per run of at least 2, got \"1\"" },
	{ JX "    sql: SELECT 1\n    batch: 0\n",
	  "inline.yaml:9:12: job \"x\": batch must be true, false or a number of partitions per run of at least 2, got \"0\"" },
	{ JX "    sql: SELECT 1\n    max_backfill_time: 2 hours\n",
	  "inline.yaml:9:24: job \"x\": max_backfill_time must be a duration like 30s, 15m, 2h or 1d (0s: none), got \"2 hours\"" },
	{ "max_backfill_time: -1h\njobs: []\n",
	  "inline.yaml:1:20: max_backfill_time must be a duration like 30s, 15m, 2h or 1d (0s: none), got \"-1h\"" },
	{ JX "    sql: SELECT 1\n    batch: yes\n",
	  "inline.yaml:9:12: job \"x\": batch must be true, false or a number of partitions per run of at least 2, got \"yes\"" },
	{ "jobs:\n  - name: e\n    partition: day\n    command: [/bin/true]\n    checks:\n      - {name: c, sql: SELECT 1}\n",
	  "inline.yaml:5:5: job \"e\": checks needs a warehouse to run on: add warehouse: NAME" },
	{ "warehouses:\n  - name: s\n    sqlite: s.db\n    password_file: pw\n",
	  "inline.yaml:4:5: warehouse \"s\": password_file is for postgres and clickhouse warehouses only" },
	/* partition: none (issue 41): a lookback, a partition_column, a
	 * clickhouse warehouse */
	{ "jobs:\n  - {name: d, partition: day, command: [x]}\n"
	  "  - {name: t, partition: none, upstream: [{job: d, lookback: 1}], command: [x]}\n",
	  "inline.yaml:3:43: job \"t\" has partition: none: it reads every partition of \"d\" already; remove lookback" },
	{ JX "    sql: SELECT 1\n  - name: t\n    partition: none\n    upstream: [x]\n"
	  "    warehouse: sales\n    table: t\n    partition_column: k\n    sql: SELECT 1\n",
	  "inline.yaml:14:5: job \"t\": partition_column: a job with partition: none writes its whole table, no column holds its key; remove it" },
	{ "warehouses:\n  - name: c\n    clickhouse: http://127.0.0.1:8123/\njobs:\n"
	  "  - {name: d, partition: day, command: [x]}\n"
	  "  - {name: t, partition: none, upstream: [d], warehouse: c, table: t, sql: SELECT 1}\n",
	  "inline.yaml:6:26: job \"t\": partition: none is not available on a clickhouse warehouse in this version (its runs replace one partition of a partition_column); use a SQLite or PostgreSQL warehouse, or a command job" },
	/* a zoned hourly job on clickhouse, its zone the top level's, one
	 * with a half-hour offset after its start: at its partition: */
	{ "timezone: Australia/Lord_Howe\nwarehouses:\n  - name: c\n"
	  "    clickhouse: http://127.0.0.1:8123/\njobs:\n"
	  "  - {name: h, partition: hour, start: 2020-01-01T00, warehouse: c, table: t, partition_column: k, sql: SELECT 1}\n",
	  "inline.yaml:6:26: job \"h\": partition: hour in timezone Australia/Lord_Howe is not supported on a clickhouse warehouse: the zone has offsets that are not whole hours after the job's start, so its hours do not start on the UTC hours toStartOfHour partitions by; write partition: day (or longer) in that zone, or timezone: UTC for its hours" },
	{ CHX "    sql: SELECT 1\n",
	  "inline.yaml:5:5: job \"x\" runs on clickhouse warehouse \"c\": it needs sql: (a SELECT of the partition's rows), table: and partition_column:" },
	{ CHX "    sql: SELECT 1\n    table: a-b\n    partition_column: dt\n",
	  "inline.yaml:9:12: job \"x\": table must be a plain name ([A-Za-z_][A-Za-z0-9_]*, under 111 bytes with _backfilld_stage_) on a clickhouse warehouse" },
	{ CHX "    sql: \"SELECT today()\"\n    table: t\n    partition_column: dt\n",
	  "inline.yaml:8:18: job \"x\" reads the wall clock (today()): take the date from :partition, or set allow_wall_clock: true" },
	{ JX "    sql: SELECT 1\n    allow_empty: true\n",
	  "inline.yaml:9:5: job \"x\": allow_empty is for jobs on clickhouse warehouses only" },
	{ "warehouses:\n  - name: c\n    clickhouse: 127.0.0.1:8123\n",
	  "inline.yaml:3:17: warehouse \"c\": clickhouse must be the URL of the HTTP interface (http://HOST:8123/?database=DB), got \"127.0.0.1:8123\"" },
	{ "warehouses:\n  - name: s\n    sqlite: s.db\n    cluster: two\n",
	  "inline.yaml:4:5: warehouse \"s\": cluster is for clickhouse warehouses only" },
	{ "warehouses:\n  - name: c\n    clickhouse: http://h:8123/\n    shards: [http://h:8123/]\n",
	  "inline.yaml:4:5: warehouse \"c\": shards needs cluster: (the remote_servers cluster they are the shards of)" },
	{ "warehouses:\n  - name: c\n    clickhouse: http://h:8123/\n    cluster: a-b\n",
	  "inline.yaml:4:5: warehouse \"c\": cluster must be a plain name ([A-Za-z_][A-Za-z0-9_]*), got \"a-b\"" },
	{ "warehouses:\n  - name: c\n    clickhouse: http://h:8123/\n    cluster: two\n    shards: [http://h:8123/, h2:8123]\n",
	  "inline.yaml:5:5: warehouse \"c\": shard 2 is not an http:// or https:// URL: \"h2:8123\"" },
	{ "warehouses:\n  - name: s\n    sqlite: s.db\n    user: etl\n",
	  "inline.yaml:4:5: warehouse \"s\": user is for clickhouse warehouses only (postgres: the user goes in the CONNINFO)" },
	{ "warehouses:\n  - name: s\n    sqlite: s.db\n    max_connections: 0\n",
	  "inline.yaml:4:22: warehouse \"s\": max_connections must be a positive integer, got \"0\"" },
	{ "warehouses:\n  - name: s\n    sqllite: s.db\n",
	  "inline.yaml:3:5: unknown key \"sqllite\" in warehouse \"s\"; did you mean \"sqlite\"?" },
	{ "socket: /run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\n",
	  "inline.yaml:1:9: socket path /run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock is 114 bytes long; a unix socket path has at most 107" },
	{ JX "    sql: \"SELECT CURRENT_TIMESTAMP\"\n",
	  "inline.yaml:8:18: job \"x\" reads the wall clock (CURRENT_TIMESTAMP): take the date from :partition, or set allow_wall_clock: true" },
	{ JX "    sql: >\n      SELECT 1,\n      current_time\n",
	  "inline.yaml:8:10: job \"x\" reads the wall clock (CURRENT_TIME): take the date from :partition, or set allow_wall_clock: true" },
	{ JX "    sql: |\n\n      SELECT 1;\n        SELECT date('NOW');\n",
	  "inline.yaml:11:21: job \"x\" reads the wall clock ('now'): take the date from :partition, or set allow_wall_clock: true" },
	{ JX "    sql: SELECT 1\n    checks:\n      - {name: a, sql: SELECT 1}\n      - {name: a, sql: SELECT 2}\n",
	  "inline.yaml:11:16: duplicate check \"a\" of job \"x\" (first at line 10); check names must be unique" },
	{ JX "    sql: SELECT 1\n    checks:\n      - SELECT 1\n",
	  "inline.yaml:10:9: job \"x\": checks must be a sequence of {name, sql}, got \"SELECT 1\"" },
	{ JX "    sql: SELECT 1\n    checks:\n      - name: c\n        sqll: SELECT 1\n",
	  "inline.yaml:11:9: unknown key \"sqll\" in check \"c\" of job \"x\"; did you mean \"sql\"?" },
	{ JX "    sql:\n",
	  "inline.yaml:8:9: job \"x\": sql must be SQL text, got nothing" },
	{ JX "    start: 2026-01-01T05\n    sql: SELECT 1\n",
	  "inline.yaml:8:12: job \"x\": start must be a date YYYY-MM-DD, got \"2026-01-01T05\"" },
	{ "jobs:\n  - name: h\n    partition: hour\n    start: 2026-01-01T24\n    command: [/bin/true]\n",
	  "inline.yaml:4:12: job \"h\": start must be a date YYYY-MM-DD or an hour YYYY-MM-DDTHH, got \"2026-01-01T24\"" },
	{ "jobs:\n  - name: h\n    partition: hour\n    start: 2026-01-02T05\n    end: 2026-01-02T04\n    command: [/bin/true]\n",
	  "inline.yaml:5:10: job \"h\": end 2026-01-02T04 is before start 2026-01-02T05" },
	{ "jobs:\n  - name: w\n    partition: week\n    start: 2026-01-07\n    end: 2026-01-05\n    command: [/bin/true]\n",
	  "inline.yaml:5:10: job \"w\": end 2026-01-05 is before start 2026-01-07" },
	{ "jobs:\n  - name: c\n    partition: day\n    warehouse: dw\n    command: [x]\n",
	  "inline.yaml:4:16: job \"c\": unknown warehouse \"dw\"; no warehouses are defined" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rows: COUNT(*)\n      rows: SUM(1)\n",
	  "inline.yaml:13:7: duplicate key \"rows\" in job \"x\" (first at line 12); keep one" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rows: [COUNT(*)]\n",
	  "inline.yaml:12:13: metric \"rows\" of job \"x\" must be an SQL expression or a mapping with sql:, max_change: and trend:, got a sequence" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rows: {max_change: 10%}\n",
	  "inline.yaml:12:13: metric \"rows\" of job \"x\" needs sql:" },
	{ JX "    sql: SELECT 1\n    checks:\n      - {name: c, sql: SELECT 1, severity: loud}\n",
	  "inline.yaml:10:44: check \"c\" of job \"x\": severity must be error or warn, got \"loud\"" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rows: {sql: COUNT(*), severity: warn}\n",
	  "inline.yaml:12:13: metric \"rows\" of job \"x\": severity: needs max_change: or trend:" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rev: {sql: SUM(v), trend: {last: 28}}\n",
	  "inline.yaml:12:33: metric \"rev\" of job \"x\": trend needs last: (the partitions it looks back on) and max_sigma: (how many standard deviations from their mean are allowed)" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rev: {sql: SUM(v), trend: {last: 1, max_sigma: 3}}\n",
	  "inline.yaml:12:40: metric \"rev\" of job \"x\": last must be an integer from 2 to 1000, got \"1\"" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rev: {sql: SUM(v), trend: {last: 1001, max_sigma: 3}}\n",
	  "inline.yaml:12:40: metric \"rev\" of job \"x\": last must be an integer from 2 to 1000, got \"1001\"" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rev: {sql: SUM(v), trend: {last: 28, max_sigma: -3}}\n",
	  "inline.yaml:12:55: metric \"rev\" of job \"x\": max_sigma must be a positive number like 3, got \"-3\"" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rev: {sql: SUM(v), trend: {last: 28, max_sigma: 3, min_history: 29}}\n",
	  "inline.yaml:12:71: metric \"rev\" of job \"x\": trend min_history 29 is above last 28; lower it (or raise last)" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rev: {sql: SUM(v), trend: {last: 28, max_sigmas: 3}}\n",
	  "inline.yaml:12:44: unknown key \"max_sigmas\" in metric \"rev\" of job \"x\"; did you mean \"max_sigma\"?" },
	{ JX "    sql: SELECT 1\n    table: t\n    partition_column: dt\n    metrics:\n      rev: {sql: SUM(v), trend: 3 sigma}\n",
	  "inline.yaml:12:33: metric \"rev\" of job \"x\": trend must be a mapping {last, max_sigma, min_history}, got \"3 sigma\"" },
	{ RX "      - name: r\n        source: {warehouse: landing, sql: \"SELECT SUM(a) FROM s WHERE d < now()\"}\n        target: SELECT 1\n",
	  "inline.yaml:13:75: job \"x\" reconcile \"r\" source reads the wall clock (now()): take the date from :partition, or set allow_wall_clock: true" },
	{ RX "      - name: r\n        source: {warehouse: landing, sql: SELECT 1}\n        target: SELECT SUM(v) FROM t WHERE d = date('now')\n",
	  "inline.yaml:14:53: job \"x\" reconcile \"r\" target reads the wall clock ('now'): take the date from :partition, or set allow_wall_clock: true" },
	{ RX "      - name: r\n        source: {warehouse: landing, sql: \"SELECT 1; COMMIT\"}\n        target: SELECT 1\n",
	  "inline.yaml:13:54: job \"x\" reconcile \"r\" source statement 2 controls the run's transaction (COMMIT): backfilld begins and commits each partition's transaction itself; remove it (to nest one, use SAVEPOINT name ... RELEASE name)" },
	{ RX "      - name: r\n        source: {warehouse: landing, sql: SELECT 1}\n        target: |\n          SELECT 1;\n          ROLLBACK;\n",
	  "inline.yaml:16:11: job \"x\" reconcile \"r\" target statement 2 controls the run's transaction (ROLLBACK): backfilld begins and commits each partition's transaction itself; remove it (to nest one, use SAVEPOINT name ... RELEASE name)" },
	{ JX "    sql: SELECT 1\n    reconcile:\n      - {name: r, source: {warehouse: nope, sql: SELECT 1}, target: SELECT 1}\n",
	  "inline.yaml:10:9: reconcile \"r\" of job \"x\": unknown source warehouse \"nope\"" },
	{ JX "    sql: SELECT 1\n    reconcile:\n      - {name: r, source: {warehouse: sales, sql: SELECT 1}, target: SELECT 1, tolerance: 5 %}\n",
	  "inline.yaml:10:91: reconcile \"r\" of job \"x\": tolerance must be a percentage like 0.1% or a non-negative number, got \"5 %\"" },
	{ JX "    sql: SELECT 1\n    reconcile:\n      - {name: r, source: {warehouse: sales}, target: SELECT 1}\n",
	  "inline.yaml:10:27: reconcile \"r\" of job \"x\": source needs warehouse: and sql:" },
	{ JX "    command: [x]\n    reconcile:\n      - {name: r, source: {warehouse: sales, sql: SELECT 1}, target: SELECT 1}\n",
	  "inline.yaml:9:5: job \"x\": reconcile needs a SQL job (sql: or sql_file:)" },
	{ JX "    sql: SELECT 1\n    reconcile:\n      - {name: r, target: SELECT 1}\n",
	  "inline.yaml:10:9: reconcile \"r\" of job \"x\" needs name:, source: and target:" },
	{ JX "    sql: SELECT 1\n    key: []\n",
	  "inline.yaml:9:10: job \"x\": key must be a sequence of column names, got an empty sequence" },
	{ JX "    sql: SELECT 1\n    min_rows: -1\n",
	  "inline.yaml:9:15: job \"x\": min_rows must be a non-negative integer, got \"-1\"" },
	{ "? [a]\n: 1\n",
	  "inline.yaml:1:3: keys must be names, got a sequence" },
	{ "max_concurrency: 4\nbad: \xff\n",
	  "inline.yaml:2:6: invalid YAML: invalid leading UTF-8 octet" },
	{ "max_concurrency: 99999999999\n",
	  "inline.yaml:1:18: max_concurrency must be a positive integer, got \"99999999999\"" },
	{ "max_concurrency: \"4\x01\"\n",
	  "inline.yaml:1:20: invalid YAML: control characters are not allowed" },
	{ "hook_concurrency: 0\n",
	  "inline.yaml:1:19: hook_concurrency must be an integer from 1 to 1024, got \"0\"" },
	{ "hook_concurrency: 1025\n",
	  "inline.yaml:1:19: hook_concurrency must be an integer from 1 to 1024, got \"1025\"" },
	{ "hook_queue: -1\n",
	  "inline.yaml:1:13: hook_queue must be an integer from 0 to 100000, got \"-1\"" },
	{ "hook_queue: 100001\n",
	  "inline.yaml:1:13: hook_queue must be an integer from 0 to 100000, got \"100001\"" },
	{ "hook_queue: [1]\n",
	  "inline.yaml:1:13: hook_queue must be an integer from 0 to 100000, got a sequence" },
	{ "shutdown_grace: 10x\n",
	  "inline.yaml:1:17: shutdown_grace must be a duration like 30s, 15m, 2h or 1d, got \"10x\"" },
	{ "jobs:\n  - name: \".hidden\"\n    partition: day\n    command: [x]\n",
	  "inline.yaml:2:11: job name \".hidden\" must be 1 to 64 letters, digits, '_', '-' or '.', not starting with '-' or '.'" },
	{ "jobs:\n  - name: e\n    partition: day\n    command: [\"\", x]\n",
	  "inline.yaml:4:15: job \"e\": command must be a non-empty sequence of strings (argv, no shell), got \"\"" },
	{ "jobs:\n  - name: [e]\n    partition: day\n    command: [x]\n",
	  "inline.yaml:2:11: job 1: name must be a name, got a sequence" },
	/* upstream entries: a name or {job, lookback} (issue 41) */
	{ "jobs:\n  - {name: a, partition: day, command: [x]}\n  - {name: b, partition: day, upstream: [{job: a, lookbak: 1}], command: [x]}\n",
	  "inline.yaml:3:51: job \"b\": upstream entry 1: unknown key \"lookbak\"; an entry is a job name or {job: NAME, lookback: N}" },
	{ "jobs:\n  - {name: a, partition: day, command: [x]}\n  - {name: b, partition: day, upstream: [{lookback: 1}], command: [x]}\n",
	  "inline.yaml:3:42: job \"b\": upstream entry 1 has no job: write {job: NAME, lookback: N}" },
	{ "jobs:\n  - {name: a, partition: day, command: [x]}\n  - {name: b, partition: day, upstream: [{job: a, lookback: -1}], command: [x]}\n",
	  "inline.yaml:3:61: job \"b\": upstream entry 1: lookback must be an integer from 0 to 1000 (partitions of this job before each one), got \"-1\"" },
	{ "jobs:\n  - {name: a, partition: day, command: [x]}\n  - {name: b, partition: day, upstream: [{job: a, lookback: 1001}], command: [x]}\n",
	  "inline.yaml:3:61: job \"b\": upstream entry 1: lookback must be an integer from 0 to 1000 (partitions of this job before each one), got \"1001\"" },
	{ "jobs:\n  - {name: a, partition: day, command: [x]}\n  - {name: b, partition: day, upstream: [{job: [a]}], command: [x]}\n",
	  "inline.yaml:3:48: job \"b\": upstream must be a sequence of job names or {job: NAME, lookback: N}, got a sequence" },
	{ "jobs:\n  - {name: a, partition: day, command: [x]}\n  - {name: b, partition: day, upstream: [{job: b, lookback: 1}, c], command: [x]}\n",
	  "inline.yaml:3:65: job \"b\": unknown upstream job \"c\"; did you mean \"a\"?" },
	{ "jobs:\n  - {name: a, partition: day, command: [x]}\n  - {name: b, partition: day, upstream: [{job: b, lookback: 1}, a, a], command: [x]}\n",
	  "inline.yaml:3:68: job \"b\" lists upstream \"a\" twice; keep one" },
	{ "state_db: /tmp/x.db\nstate:\n  postgres: \"dbname=b\"\n",
	  "inline.yaml:2:1: state_db and state are exclusive; keep one (state_db: PATH for one host, state: postgres: for several)" },
	{ "state:\n  postgres: \"dbname=b\"\nstate_db: /tmp/x.db\n",
	  "inline.yaml:3:1: state_db and state are exclusive; keep one (state_db: PATH for one host, state: postgres: for several)" },
	{ "state:\n  password_file: pw\n",
	  "inline.yaml:2:3: state needs postgres: CONNINFO (the PostgreSQL database the nodes share); for one host, use state_db: PATH instead" },
	{ "state:\n",
	  "inline.yaml:1:7: state must be a mapping with postgres: CONNINFO and optionally password_file:, got nothing" },
	{ "state: {postgres: x, sqlite: y}\n",
	  "inline.yaml:1:22: unknown key \"sqlite\" in state" },
	{ "state: {postgres: \"\"}\n",
	  "inline.yaml:1:19: state: postgres must be a libpq connection string, got \"\"" },
	{ "lease: 10s\n",
	  "inline.yaml:1:1: lease applies to several hosts: it needs state: postgres: (a state store the nodes share)" },
	{ "state: {postgres: x}\nlease: 0s\n",
	  "inline.yaml:2:8: lease must be a duration of at least 1s, like 10s, got \"0s\"" },
	{ "state: {postgres: x}\nlease: soon\n",
	  "inline.yaml:2:8: lease must be a duration of at least 1s, like 10s, got \"soon\"" },
	{ "node: \"etl 2\"\n",
	  "inline.yaml:1:7: node name \"etl 2\" must be 1 to 64 letters, digits, '_', '-' or '.', not starting with '-' or '.'" },
	{ "node: [a]\n",
	  "inline.yaml:1:7: node must be a node name, got a sequence" },
	{ "jobs:\n  - name: e\n    partition: day\n    command: [x]\n    nodes: [a]\n",
	  "inline.yaml:5:5: job \"e\": nodes: pins a job to some of several hosts; it needs state: postgres: (a state store the nodes share)" },
	{ "state: {postgres: x}\njobs:\n  - name: e\n    partition: day\n    command: [x]\n    nodes: [a, b, a]\n",
	  "inline.yaml:6:19: job \"e\": node \"a\" is listed twice in nodes:" },
	{ "state: {postgres: x}\njobs:\n  - name: e\n    partition: day\n    command: [x]\n    nodes: [a, \"b/c\"]\n",
	  "inline.yaml:6:16: job \"e\": node name \"b/c\" must be 1 to 64 letters, digits, '_', '-' or '.', not starting with '-' or '.'" },
	{ "state: {postgres: x}\njobs:\n  - name: e\n    partition: day\n    command: [x]\n    nodes: []\n",
	  "inline.yaml:6:12: job \"e\": nodes must be a sequence of node names, got an empty sequence" },
};

#define NBADI (int)(sizeof bad_inlines / sizeof bad_inlines[0])

/* Each inline broken config is refused with exactly its message. */
START_TEST(test_bad_inline)
{
	load_bad(bad_inlines[_i].yaml, bad_inlines[_i].msg);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Wall clock                                                          */
/* ------------------------------------------------------------------ */

struct wall_case {
	const char *sql; /* as a YAML double-quoted scalar body */
	bool refused;
	bool pg;         /* on a PostgreSQL warehouse */
};

/* a SQL job "x" on a PostgreSQL warehouse, its body from line 8 */
#define JXPG "warehouses:\n  - name: dw\n    postgres: \"dbname=x\"\njobs:\n" \
	"  - name: x\n    warehouse: dw\n    partition: day\n"

static const struct wall_case wall_cases[] = {
	{ "SELECT 'now'", true, false },
	{ "SELECT datetime('Now', 'start of day')", true, false },
	{ "SELECT 'nowhere', 'now '", false, false },
	{ "SELECT \\\"current_date\\\" FROM t", false, false },
	{ "SELECT `current_date` FROM t", false, false },
	{ "-- current_date\\nSELECT 1", false, false },
	{ "/* CURRENT_TIME, 'now' */ SELECT 1", false, false },
	{ "SELECT current_timestamp", true, false },
	{ "SELECT Current_Date + 1", true, false },
	{ "SELECT my_current_date, current_dates, current_date_x FROM t", false, false },
	{ "SELECT $$current_date$$", false, false },
	{ "SELECT $body$ 'now' $body$", true, false },
	{ "SELECT $body$ 'now' $body$", false, true },
	{ "SELECT $1, current_time", true, false },
	{ "SELECT 'it''s', CURRENT_TIME", true, false },
	{ "SELECT 'it''s current_date'", false, false },
	{ "SELECT E'\\\\'current_date'", true, false },
	{ "SELECT E'\\\\'current_date'", false, true },
	{ "SELECT date(), 1", true, false },
	{ "SELECT strftime('%s')", true, false },
	{ "SELECT date(\\\"now\\\")", true, false },
	{ "SELECT date(:partition, '+1 day'), strftime('%Y', :partition)", false, false },
	{ "SELECT now()", false, false },
	{ "SELECT now(), 1", true, true },
	{ "SELECT 'today'::date", true, true },
	{ "SELECT LOCALTIMESTAMP", true, true },
	{ "SELECT date(), now_total FROM t", false, true },
	{ "SELECT * FROM t WHERE dt = :partition", false, false },
	{ "SELECT 1 -- no newline at the end, current_date", false, false },
	{ "SELECT 'unterminated current_date", false, false },
};

#define NWALL (int)(sizeof wall_cases / sizeof wall_cases[0])

/* Wall-clock reads found outside literals, identifiers and comments. */
START_TEST(test_wall_clock)
{
	const struct wall_case *w = &wall_cases[_i];
	char yaml[1024];
	struct config *cfg = NULL;
	struct err err = { 0 };
	int rc;

	snprintf(yaml, sizeof yaml, "%s    sql: \"%s\"\n", w->pg ? JXPG : JX,
		 w->sql);
	rc = config_load_string("inline.yaml", yaml, strlen(yaml), &cfg, &err);
	if (w->refused) {
		ck_assert_msg(rc == -1, "not refused: %s", w->sql);
		ck_assert_ptr_nonnull(strstr(err.msg, "reads the wall clock"));
	} else {
		ck_assert_msg(rc == 0, "refused: %s: %s", w->sql, err.msg);
		config_unref(cfg);
	}
	/* allow_wall_clock: true lets every one of them through */
	snprintf(yaml, sizeof yaml,
		 "%s    allow_wall_clock: true\n    sql: \"%s\"\n"
		 "    checks:\n      - {name: c, sql: \"%s\"}\n",
		 w->pg ? JXPG : JX, w->sql, w->sql);
	rc = config_load_string("inline.yaml", yaml, strlen(yaml), &cfg, &err);
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_int_eq(cfg->jobs[0].allow_wall_clock, true);
	config_unref(cfg);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The full example                                                    */
/* ------------------------------------------------------------------ */

/* Shaped like config/example.yaml (a fact job and its weekly mart), a
 * warehouse of each kind, plus a monthly rollup; the mart comes first in
 * the file so that topo has to reorder. */
static const char full_yaml[] =
	"state_db: state/state.db      # relative: against this file's folder\n"
	"max_concurrency: 3\n"
	"max_catchup: 31\n"
	"max_backfill: 366\n"
	"log_level: debug\n"
	"socket_group: etl\n"
	"shutdown_grace: 2m\n"
	"\n"
	"warehouses:\n"
	"  - name: sales\n"
	"    sqlite: ../data/sales.db\n"
	"  - name: dw\n"
	"    postgres: \"host=/run/postgresql dbname=etl user=etl\"\n"
	"    password_file: secrets/./dw.pass\n"
	"    max_connections: 4\n"
	"\n"
	"jobs:\n"
	"  - name: mart_weekly_sales\n"
	"    warehouse: sales\n"
	"    partition: week\n"
	"    upstream: [fct_daily_sales]\n"
	"    sql: |\n"
	"      DELETE FROM mart_weekly_sales WHERE week_start = :partition;\n"
	"      INSERT INTO mart_weekly_sales (week_start, revenue_usd)\n"
	"      SELECT :partition, SUM(revenue_usd) FROM fct_daily_sales\n"
	"      WHERE dt >= :partition_start AND dt < :partition_end;\n"
	"\n"
	"  - name: fct_daily_sales\n"
	"    warehouse: sales\n"
	"    partition: day\n"
	"    start: 2026-01-01\n"
	"    end: 2026-12-31\n"
	"    ready_after: 2h\n"
	"    catchup: true\n"
	"    max_catchup: 14\n"
	"    concurrency: 2\n"
	"    retries: 2\n"
	"    retry_backoff: 30s\n"
	"    timeout: 15m\n"
	"    sql: |\n"
	"      DELETE FROM fct_daily_sales WHERE dt = :partition;\n"
	"      INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)\n"
	"      SELECT dt, store_id, COUNT(*), SUM(amount_usd)\n"
	"      FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;\n"
	"    checks:\n"
	"      - name: reconciles_with_raw\n"
	"        sql: SELECT (SELECT ROUND(SUM(revenue_usd),2) FROM fct_daily_sales WHERE dt = :partition)\n"
	"                  IS (SELECT ROUND(SUM(amount_usd),2) FROM raw_sales WHERE dt = :partition)\n"
	"    table: fct_daily_sales\n"
	"    partition_column: dt\n"
	"    key: [dt, store_id]\n"
	"    min_rows: 1\n"
	"    metrics:\n"
	"      revenue: {sql: SUM(revenue_usd), max_change: 50%}\n"
	"      stores: COUNT(DISTINCT store_id)\n"
	"    batch: false\n"
	"    late_data:\n"
	"      sql: SELECT DISTINCT dt FROM raw_sales_landing WHERE loaded_at > :since\n"
	"      every: 15m\n"
	"\n"
	"  - name: export_daily\n"
	"    partition: day\n"
	"    upstream: [fct_daily_sales]\n"
	"    command: [\"/usr/local/bin/export\", \"--date\", \"{partition}\"]   # argv, no shell\n"
	"\n"
	"  - name: rollup_monthly\n"
	"    warehouse: dw\n"
	"    partition: month\n"
	"    upstream: [mart_weekly_sales]\n"
	"    catchup: false\n"
	"    batch: true\n"
	"    sql: INSERT INTO rollup SELECT partition_key, 1 FROM backfill_manifest\n";

/* The same jobs in another order, indented differently, with comments:
 * every code_version must match. */
static const char full_moved_yaml[] =
	"# moved around\n"
	"jobs:\n"
	"- name: export_daily\n"
	"  command:\n"
	"    - /usr/local/bin/export\n"
	"    - --date\n"
	"    - \"{partition}\"\n"
	"  upstream: [fct_daily_sales]\n"
	"  partition: day\n"
	"- name: fct_daily_sales\n"
	"  partition: day\n"
	"  warehouse: sales\n"
	"  ready_after: 3h            # not part of the definition\n"
	"  sql: |\n"
	"    DELETE FROM fct_daily_sales WHERE dt = :partition;\n"
	"    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)\n"
	"    SELECT dt, store_id, COUNT(*), SUM(amount_usd)\n"
	"    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;\n"
	"  min_rows: 1\n"
	"  key: [dt, store_id]\n"
	"  partition_column: dt\n"
	"  table: fct_daily_sales\n"
	"  checks:\n"
	"    - sql: \"SELECT (SELECT ROUND(SUM(revenue_usd),2) FROM fct_daily_sales WHERE dt = :partition) IS (SELECT ROUND(SUM(amount_usd),2) FROM raw_sales WHERE dt = :partition)\"\n"
	"      name: reconciles_with_raw\n"
	"  metrics:\n"
	"    revenue:\n"
	"      max_change: 50%\n"
	"      sql: SUM(revenue_usd)\n"
	"    stores: {sql: COUNT(DISTINCT store_id)}\n"
	"warehouses:\n"
	"- {name: sales, sqlite: /elsewhere/sales.db}\n";

/* Every value of the full example, defaults included. */
START_TEST(test_full_values)
{
	struct config *cfg = load_ok(full_yaml);
	const struct warehouse_def *w;
	const struct job_def *f, *m, *e, *r;

	ck_assert_int_eq(cfg->refs, 1);
	ck_assert_str_eq(cfg->path, "/srv/bf/conf/backfilld.yaml");
	ck_assert_str_eq(cfg->dir, "/srv/bf/conf");
	ck_assert_str_eq(cfg->state_db, "/srv/bf/conf/state/state.db");
	ck_assert_str_eq(cfg->socket, "/run/backfilld/backfilld.sock");
	ck_assert_str_eq(cfg->socket_group, "etl");
	ck_assert_str_eq(cfg->log_level, "debug");
	ck_assert_int_eq(cfg->max_concurrency, 3);
	ck_assert_int_eq(cfg->max_catchup, 31);
	ck_assert_int_eq(cfg->max_backfill, 366);
	ck_assert_int_eq(cfg->shutdown_grace, 120);
	ck_assert_int_eq(strlen(cfg->file_hash), 16);
	ck_assert_int_eq(strspn(cfg->file_hash, "0123456789abcdef"), 16);

	ck_assert_uint_eq(cfg->nwarehouses, 2);
	w = &cfg->warehouses[0];
	ck_assert_str_eq(w->name, "sales");
	ck_assert_int_eq(w->kind, WH_SQLITE);
	ck_assert_str_eq(w->path, "/srv/bf/conf/../data/sales.db");
	ck_assert_ptr_null(w->conninfo);
	ck_assert_ptr_null(w->password_file);
	ck_assert_int_eq(w->max_connections, 3); /* min(max_concurrency, 4) */
	ck_assert_int_eq(w->pos.line, 10);
	ck_assert_int_eq(w->pos.col, 5);
	w = &cfg->warehouses[1];
	ck_assert_str_eq(w->name, "dw");
	ck_assert_int_eq(w->kind, WH_POSTGRES);
	ck_assert_ptr_null(w->path);
	ck_assert_str_eq(w->conninfo, "host=/run/postgresql dbname=etl user=etl");
	ck_assert_str_eq(w->password_file, "/srv/bf/conf/secrets/dw.pass");
	ck_assert_int_eq(w->max_connections, 4);

	ck_assert_uint_eq(cfg->njobs, 4);
	m = config_job(cfg, "mart_weekly_sales");
	f = config_job(cfg, "fct_daily_sales");
	e = config_job(cfg, "export_daily");
	r = config_job(cfg, "rollup_monthly");
	ck_assert_ptr_eq(m, &cfg->jobs[0]);
	ck_assert_ptr_eq(f, &cfg->jobs[1]);
	ck_assert_ptr_eq(e, &cfg->jobs[2]);
	ck_assert_ptr_eq(r, &cfg->jobs[3]);
	ck_assert_ptr_null(config_job(cfg, "nope"));
	ck_assert_int_eq(config_job_index(cfg, "export_daily"), 2);
	ck_assert_int_eq(config_job_index(cfg, "nope"), -1);

	/* the fact job: every key set */
	ck_assert_int_eq(f->pos.line, 28);
	ck_assert_int_eq(f->pos.col, 5);
	ck_assert_str_eq(f->warehouse_name, "sales");
	ck_assert_int_eq(f->warehouse, 0);
	ck_assert_int_eq(f->grain, GRAIN_DAY);
	ck_assert(f->has_start);
	ck_assert_int_eq(f->start, day(2026, 1, 1));
	ck_assert(f->has_end);
	ck_assert_int_eq(f->end, day(2026, 12, 31));
	ck_assert_int_eq(f->ready_after, 7200);
	ck_assert(f->catchup);
	ck_assert_int_eq(f->max_catchup, 14);
	ck_assert_int_eq(f->max_backfill, 366);
	ck_assert_int_eq(f->concurrency, 2);
	ck_assert_int_eq(f->retries, 2);
	ck_assert_int_eq(f->retry_backoff, 30);
	ck_assert_int_eq(f->timeout, 900);
	ck_assert(!f->allow_wall_clock);
	ck_assert(!f->batch);
	ck_assert_str_eq(f->sql,
		"DELETE FROM fct_daily_sales WHERE dt = :partition;\n"
		"INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)\n"
		"SELECT dt, store_id, COUNT(*), SUM(amount_usd)\n"
		"FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;\n");
	ck_assert_ptr_null(f->sql_file);
	ck_assert_ptr_null(f->command);
	ck_assert_uint_eq(f->command_len, 0);
	ck_assert_uint_eq(f->nchecks, 1);
	ck_assert_str_eq(f->checks[0].name, "reconciles_with_raw");
	ck_assert_str_eq(f->checks[0].sql,
		"SELECT (SELECT ROUND(SUM(revenue_usd),2) FROM fct_daily_sales WHERE dt = :partition) "
		"IS (SELECT ROUND(SUM(amount_usd),2) FROM raw_sales WHERE dt = :partition)");
	ck_assert_int_eq(f->checks[0].pos.line, 46);
	ck_assert_int_eq(f->checks[0].pos.col, 9);
	ck_assert_uint_eq(f->nupstream, 0);
	ck_assert_str_eq(f->table, "fct_daily_sales");
	ck_assert_str_eq(f->partition_column, "dt");
	ck_assert_uint_eq(f->nkey, 2);
	ck_assert_str_eq(f->key[0], "dt");
	ck_assert_str_eq(f->key[1], "store_id");
	ck_assert_int_eq(f->min_rows, 1);
	ck_assert_uint_eq(f->nmetrics, 2);
	ck_assert_str_eq(f->metrics[0].name, "revenue");
	ck_assert_str_eq(f->metrics[0].sql, "SUM(revenue_usd)");
	ck_assert(f->metrics[0].has_max_change);
	ck_assert_double_eq(f->metrics[0].max_change, 50.0);
	ck_assert_str_eq(f->metrics[1].name, "stores");
	ck_assert_str_eq(f->metrics[1].sql, "COUNT(DISTINCT store_id)");
	ck_assert(!f->metrics[1].has_max_change);
	ck_assert_ptr_nonnull(f->late_data);
	ck_assert_str_eq(f->late_data->sql,
		"SELECT DISTINCT dt FROM raw_sales_landing WHERE loaded_at > :since");
	ck_assert_int_eq(f->late_data->every, 900);

	/* the mart: defaults from the top level */
	ck_assert_int_eq(m->grain, GRAIN_WEEK);
	ck_assert(!m->has_start);
	ck_assert(!m->has_end);
	ck_assert_int_eq(m->ready_after, 0);
	ck_assert(m->catchup);
	ck_assert_int_eq(m->max_catchup, 31);
	ck_assert_int_eq(m->max_backfill, 366);
	ck_assert_int_eq(m->concurrency, 1);
	ck_assert_int_eq(m->retries, 0);
	ck_assert_int_eq(m->retry_backoff, 30);
	ck_assert_int_eq(m->timeout, 0);
	ck_assert_uint_eq(m->nchecks, 0);
	ck_assert_ptr_null(m->late_data);
	ck_assert_ptr_null(m->table);
	ck_assert_uint_eq(m->nupstream, 1);
	ck_assert_str_eq(m->upstream[0], "fct_daily_sales");
	ck_assert_int_eq(m->upstream_idx[0], 1);

	/* the command job */
	ck_assert_ptr_null(e->warehouse_name);
	ck_assert_int_eq(e->warehouse, -1);
	ck_assert_ptr_null(e->sql);
	ck_assert_uint_eq(e->command_len, 3);
	ck_assert_str_eq(e->command[0], "/usr/local/bin/export");
	ck_assert_str_eq(e->command[1], "--date");
	ck_assert_str_eq(e->command[2], "{partition}");
	ck_assert_ptr_null(e->command[3]);
	ck_assert_int_eq(e->upstream_idx[0], 1);

	/* the rollup: week feeds month */
	ck_assert_int_eq(r->warehouse, 1);
	ck_assert(!r->catchup);
	ck_assert(r->batch);
	ck_assert_int_eq(r->upstream_idx[0], 0);

	/* downstream and topo */
	ck_assert_uint_eq(f->ndownstream, 2);
	ck_assert_int_eq(f->downstream_idx[0], 0);
	ck_assert_int_eq(f->downstream_idx[1], 2);
	ck_assert_uint_eq(m->ndownstream, 1);
	ck_assert_int_eq(m->downstream_idx[0], 3);
	ck_assert_uint_eq(e->ndownstream, 0);
	ck_assert_ptr_null(e->downstream_idx);
	ck_assert_uint_eq(r->ndownstream, 0);
	ck_assert_int_eq(cfg->topo[0], 1);
	ck_assert_int_eq(cfg->topo[1], 0);
	ck_assert_int_eq(cfg->topo[2], 2);
	ck_assert_int_eq(cfg->topo[3], 3);

	config_unref(cfg);
}
END_TEST

/* The full example with a command added to its SQL rollup: refused at
 * the second of the two keys. */
START_TEST(test_full_needs_one_kind)
{
	char *text = malloc(sizeof full_yaml + 64);

	strcpy(text, full_yaml);
	strcat(text, "    command: [/bin/true]\n");
	load_bad(text, "inline.yaml:73:5: job \"rollup_monthly\": sql and command are exclusive; keep one");
	free(text);
}
END_TEST

/* code_version: 16 hex digits, stable across loads, free of positions,
 * changed by the SQL. */
START_TEST(test_code_version)
{
	struct config *a = load_ok(full_yaml), *b = load_ok(full_yaml);
	struct config *c = load_ok(full_moved_yaml);
	const char *fa = config_job(a, "fct_daily_sales")->code_version;
	char *changed;
	char *at;
	struct config *d;
	size_t i;

	for (i = 0; i < a->njobs; i++) {
		ck_assert_int_eq(strlen(a->jobs[i].code_version), 16);
		ck_assert_int_eq(strspn(a->jobs[i].code_version, "0123456789abcdef"), 16);
		ck_assert_str_eq(a->jobs[i].code_version, b->jobs[i].code_version);
	}
	ck_assert_str_eq(a->file_hash, b->file_hash);
	ck_assert_str_ne(a->file_hash, c->file_hash);
	/* moved, reindented, other warehouse path and ready_after: same */
	ck_assert_str_eq(fa, config_job(c, "fct_daily_sales")->code_version);
	ck_assert_str_eq(config_job(a, "export_daily")->code_version,
			 config_job(c, "export_daily")->code_version);
	/* different jobs differ */
	ck_assert_str_ne(fa, config_job(a, "mart_weekly_sales")->code_version);

	/* one character of SQL changes it */
	changed = strdup(full_yaml);
	at = strstr(changed, "SUM(amount_usd)\n");
	ck_assert_ptr_nonnull(at);
	at[4] = 'A';
	d = load_ok(changed);
	ck_assert_str_ne(fa, config_job(d, "fct_daily_sales")->code_version);
	ck_assert_str_eq(config_job(a, "export_daily")->code_version,
			 config_job(d, "export_daily")->code_version);
	ck_assert_str_ne(a->file_hash, d->file_hash);
	config_unref(d);

	/* so does a metric's max_change */
	strcpy(changed, full_yaml);
	at = strstr(changed, "max_change: 50%");
	at[12] = '6';
	d = load_ok(changed);
	ck_assert_str_ne(fa, config_job(d, "fct_daily_sales")->code_version);
	config_unref(d);
	free(changed);

	config_unref(a);
	config_unref(b);
	config_unref(c);
}
END_TEST

/* Reference counting. */
START_TEST(test_refs)
{
	struct config *cfg = load_ok("max_concurrency: 2\n");

	ck_assert_ptr_eq(config_ref(cfg), cfg);
	ck_assert_int_eq(cfg->refs, 2);
	config_unref(cfg);
	ck_assert_int_eq(cfg->refs, 1);
	config_unref(cfg);
	config_unref(NULL);
	ck_assert_ptr_null(config_ref(NULL));
}
END_TEST

/* trend: its keys, min_history's default (7, or last when below), and
 * code_version (a trend is part of the definition; none changes none). */
START_TEST(test_trend_values)
{
	const char *text =
		"warehouses:\n  - name: dw\n    sqlite: /srv/dw.db\n"
		"jobs:\n  - name: x\n    warehouse: dw\n    partition: day\n"
		"    sql: SELECT 1\n    table: t\n    partition_column: dt\n"
		"    metrics:\n%s";
	char buf[1024];
	struct config *a, *b, *c, *d;
	const struct metric_def *m;

	snprintf(buf, sizeof buf, text, "      rev: {sql: SUM(v), trend: {last: 28, max_sigma: 3}, severity: warn}\n"
		 "      few: {sql: COUNT(*), trend: {last: 4, max_sigma: 2.5}}\n"
		 "      own: {sql: MAX(v), trend: {last: 10, max_sigma: 4, min_history: 3}}\n");
	a = load_ok(buf);
	m = a->jobs[0].metrics;
	ck_assert(m[0].trend.has && m[0].warn && !m[0].has_max_change);
	ck_assert_int_eq(m[0].trend.last, 28);
	ck_assert_double_eq(m[0].trend.max_sigma, 3);
	ck_assert_int_eq(m[0].trend.min_history, 7);
	ck_assert_int_eq(m[1].trend.min_history, 4);
	ck_assert_double_eq(m[1].trend.max_sigma, 2.5);
	ck_assert_int_eq(m[2].trend.min_history, 3);
	snprintf(buf, sizeof buf, text, "      rev: {sql: SUM(v), trend: {last: 28, max_sigma: 4}, severity: warn}\n"
		 "      few: {sql: COUNT(*), trend: {last: 4, max_sigma: 2.5}}\n"
		 "      own: {sql: MAX(v), trend: {last: 10, max_sigma: 4, min_history: 3}}\n");
	b = load_ok(buf);
	ck_assert_str_ne(a->jobs[0].code_version, b->jobs[0].code_version);
	snprintf(buf, sizeof buf, text, "      rev: SUM(v)\n");
	c = load_ok(buf);
	snprintf(buf, sizeof buf, text, "      rev: {sql: SUM(v)}\n");
	d = load_ok(buf);
	ck_assert(!c->jobs[0].metrics[0].trend.has);
	ck_assert_str_eq(c->jobs[0].code_version, d->jobs[0].code_version);
	config_unref(a);
	config_unref(b);
	config_unref(c);
	config_unref(d);
}
END_TEST

/* reconcile: its keys, defaults, the source warehouse resolved (also
 * when jobs come before warehouses in the file), code_version. */
START_TEST(test_reconcile_values)
{
	const char *text =
		"jobs:\n"
		"  - name: x\n    warehouse: dw\n    partition: day\n"
		"    sql: SELECT 1\n"
		"    reconcile:\n"
		"      - name: rev\n"
		"        source: {warehouse: landing, sql: SELECT 2, timeout: 5s}\n"
		"        target: SELECT 3\n"
		"        tolerance: %s\n"
		"      - name: rows\n"
		"        source: {warehouse: dw, sql: SELECT 4}\n"
		"        target: SELECT 5\n"
		"        severity: warn\n"
		"warehouses:\n"
		"  - name: dw\n    sqlite: /srv/dw.db\n"
		"  - name: landing\n    postgres: \"dbname=landing\"\n";
	char buf[1024];
	struct config *a, *b;
	const struct reconcile_def *r;

	snprintf(buf, sizeof buf, text, "0.1%");
	a = load_ok(buf);
	snprintf(buf, sizeof buf, text, "0.1");
	b = load_ok(buf);
	ck_assert_uint_eq(a->jobs[0].nreconciles, 2);
	r = &a->jobs[0].reconciles[0];
	ck_assert_str_eq(r->name, "rev");
	ck_assert_int_eq(r->source_wh, 1);
	ck_assert_str_eq(r->source_sql, "SELECT 2");
	ck_assert_int_eq(r->source_timeout, 5);
	ck_assert_str_eq(r->target_sql, "SELECT 3");
	ck_assert(r->tolerance.pct);
	ck_assert_double_eq(r->tolerance.value, 0.1);
	ck_assert(!r->warn);
	r = &a->jobs[0].reconciles[1];
	ck_assert_int_eq(r->source_wh, 0);
	ck_assert_int_eq(r->source_timeout, 60);
	ck_assert(!r->tolerance.pct);
	ck_assert_double_eq(r->tolerance.value, 0);
	ck_assert(r->warn);
	ck_assert(!b->jobs[0].reconciles[0].tolerance.pct);
	ck_assert_str_ne(a->jobs[0].code_version, b->jobs[0].code_version);
	config_unref(a);
	config_unref(b);
}
END_TEST

/* severity: warn on a check and a metric's max_change, error by default;
 * on_warning; severity is part of code_version. */
START_TEST(test_severity_values)
{
	const char *base = JX "    sql: SELECT 1\n"
		"    checks:\n"
		"      - {name: loud, sql: SELECT 1}\n"
		"      - {name: soft, sql: SELECT 1, severity: %s}\n"
		"    table: t\n    partition_column: dt\n"
		"    metrics:\n"
		"      revenue: {sql: SUM(r), max_change: 50%%, severity: %s}\n"
		"    on_warning: [\"/bin/page\", \"{error}\"]\n";
	char text[1024];
	struct config *w, *e;
	const struct job_def *j;

	snprintf(text, sizeof text, base, "warn", "warn");
	w = load_ok(text);
	snprintf(text, sizeof text, base, "error", "error");
	e = load_ok(text);
	j = config_job(w, "x");
	ck_assert(!j->checks[0].warn);
	ck_assert(j->checks[1].warn);
	ck_assert(j->metrics[0].warn);
	ck_assert_uint_eq(j->hooks[HOOK_WARNING].argc, 2);
	ck_assert_str_eq(hook_kind_name(HOOK_WARNING), "on_warning");
	ck_assert(!config_job(e, "x")->checks[1].warn);
	ck_assert(!config_job(e, "x")->metrics[0].warn);
	ck_assert_str_ne(j->code_version, config_job(e, "x")->code_version);
	config_unref(w);
	config_unref(e);
}
END_TEST

/* An almost empty file: every default. */
/* deadline, hooks and hook_timeout: values, defaults, code_version. */
START_TEST(test_hooks_values)
{
	struct config *cfg = load_ok_at("/etc/bf/x.yaml",
		"hook_timeout: 2m\nmetrics_file: prom/b.prom\n"
		"report_file: /srv/r.html\n"
		"jobs:\n"
		"  - name: a\n    partition: day\n    start: 2026-03-01\n"
		"    command: [\"true\"]\n    deadline: 6h\n"
		"    on_failure: [\"/bin/page\", \"{job}/{partition}\", \"{error}\"]\n"
		"    on_late: [\"/bin/page\", \"late {request}\"]\n"
		"    on_refused: [\"/bin/page\"]\n"
		"  - name: b\n    partition: week\n    upstream: [a]\n"
		"    command: [\"true\"]\n    deadline: 1d\n"
		"http_listen: \"[::1]:9187\"\n");
	struct config *plain = load_ok_at("/etc/bf/x.yaml",
		"jobs:\n  - name: a\n    partition: day\n    start: 2026-03-01\n"
		"    command: [\"true\"]\n");
	const struct job_def *a = config_job(cfg, "a");

	ck_assert_int_eq(cfg->hook_timeout, 120);
	ck_assert_str_eq(cfg->metrics_file, "/etc/bf/prom/b.prom");
	ck_assert_str_eq(cfg->report_file, "/srv/r.html");
	ck_assert_ptr_null(plain->metrics_file);
	ck_assert_ptr_null(plain->report_file);
	ck_assert_ptr_null(plain->http_listen);
	ck_assert_str_eq(cfg->http_listen, "[::1]:9187");
	ck_assert_str_eq(cfg->http_host, "::1");
	ck_assert_int_eq(cfg->http_port, 9187);
	ck_assert(cfg->http_loopback);
	ck_assert_int_eq(plain->hook_timeout, 30);
	ck_assert_int_eq(plain->hook_concurrency, 4);
	ck_assert_int_eq(plain->hook_queue, 4096);
	ck_assert_int_eq(a->deadline, 6 * 3600);
	ck_assert_int_eq(config_job(cfg, "b")->deadline, 86400);
	ck_assert_uint_eq(a->hooks[HOOK_FAILURE].argc, 3);
	ck_assert_str_eq(a->hooks[HOOK_FAILURE].argv[1], "{job}/{partition}");
	ck_assert_ptr_null(a->hooks[HOOK_FAILURE].argv[3]);
	ck_assert_int_eq(a->hooks[HOOK_FAILURE].pos.line, 10);
	ck_assert_str_eq(a->hooks[HOOK_LATE].argv[1], "late {request}");
	ck_assert_uint_eq(a->hooks[HOOK_REFUSED].argc, 1);
	ck_assert_ptr_null(plain->jobs[0].hooks[HOOK_FAILURE].argv);
	ck_assert_int_eq(plain->jobs[0].deadline, 0);
	/* hooks say nothing about the data a job writes */
	ck_assert_str_eq(a->code_version, plain->jobs[0].code_version);
	ck_assert_str_eq(hook_kind_name(HOOK_REFUSED), "on_refused");
	config_unref(cfg);
	config_unref(plain);
	/* the hooks' bounds at their smallest */
	plain = load_ok_at("/etc/bf/x.yaml",
			   "hook_concurrency: 1\nhook_queue: 0\n");
	ck_assert_int_eq(plain->hook_concurrency, 1);
	ck_assert_int_eq(plain->hook_queue, 0);
	config_unref(plain);
}
END_TEST

START_TEST(test_defaults)
{
	struct config *cfg = load_ok_at("rel/backfilld.yaml", "jobs: []\n");
	char cwd[PATH_MAX], want[PATH_MAX + 64];

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	snprintf(want, sizeof want, "%s/rel/backfilld.yaml", cwd);
	ck_assert_str_eq(cfg->path, want);
	snprintf(want, sizeof want, "%s/rel", cwd);
	ck_assert_str_eq(cfg->dir, want);
	ck_assert_str_eq(cfg->state_db, "/var/lib/backfilld/state.db");
	ck_assert_str_eq(cfg->socket, "/run/backfilld/backfilld.sock");
	ck_assert_ptr_null(cfg->socket_group);
	ck_assert_ptr_null(cfg->log_level);
	ck_assert_int_eq(cfg->max_concurrency, 4);
	ck_assert_int_eq(cfg->max_catchup, 31);
	ck_assert_int_eq(cfg->max_backfill, 366);
	ck_assert_int_eq(cfg->shutdown_grace, 30);
	ck_assert_int_eq(cfg->keep_runs, 365 * 86400);
	ck_assert_uint_eq(cfg->njobs, 0);
	ck_assert_uint_eq(cfg->nwarehouses, 0);
	config_unref(cfg);

	/* relative socket and state_db, "./" dropped */
	cfg = load_ok_at("/etc/bf/./x.yaml",
			 "socket: ./run/b.sock\nstate_db: st.db\n");
	ck_assert_str_eq(cfg->path, "/etc/bf/x.yaml");
	ck_assert_str_eq(cfg->socket, "/etc/bf/run/b.sock");
	ck_assert_str_eq(cfg->state_db, "/etc/bf/st.db");
	config_unref(cfg);
}
END_TEST

/* max_backfill_time (top level, a job's own, 0s: none) and batch: N. */
START_TEST(test_budget_chunk_values)
{
	static const char text[] =
		"jobs:\n"
		"  - {name: a, warehouse: w, partition: day, sql: SELECT 1}\n"
		"  - {name: b, warehouse: w, partition: day, max_backfill_time: 30m,"
		" batch: 3, sql: SELECT 1}\n"
		"  - {name: c, warehouse: w, partition: day, max_backfill_time: 0s,"
		" batch: true, sql: SELECT 1}\n"
		"max_backfill_time: 2h\n"
		"warehouses:\n  - {name: w, sqlite: w.db}\n";
	struct config *cfg = load_ok(text), *other;
	const struct job_def *b = config_job(cfg, "b"), *c = config_job(cfg, "c");

	ck_assert_int_eq(cfg->max_backfill_time, 7200);
	ck_assert_int_eq(config_job(cfg, "a")->max_backfill_time, 7200);
	ck_assert_int_eq(b->max_backfill_time, 1800);
	ck_assert_int_eq(c->max_backfill_time, 0);
	ck_assert(b->batch);
	ck_assert_int_eq(b->batch_size, 3);
	ck_assert(c->batch);
	ck_assert_int_eq(c->batch_size, 0);
	ck_assert(!config_job(cfg, "a")->batch);
	/* batch: N is another definition than batch: true; the budget is not */
	other = load_ok("jobs:\n"
			"  - {name: b, warehouse: w, partition: day, batch: true,"
			" sql: SELECT 1}\n"
			"warehouses:\n  - {name: w, sqlite: w.db}\n");
	ck_assert_str_ne(config_job(other, "b")->code_version, b->code_version);
	config_unref(other);
	other = load_ok("jobs:\n"
			"  - {name: c, warehouse: w, partition: day, batch: true,"
			" sql: SELECT 1}\n"
			"warehouses:\n  - {name: w, sqlite: w.db}\n");
	ck_assert_str_eq(config_job(other, "c")->code_version, c->code_version);
	config_unref(other);
	config_unref(cfg);
}
END_TEST

/* Top-level defaults reach jobs and warehouses whatever the key order. */
START_TEST(test_defaults_order)
{
	struct config *cfg = load_ok(
		"jobs:\n"
		"  - name: x\n"
		"    warehouse: s\n"
		"    partition: day\n"
		"    concurrency: 6\n"
		"    sql: SELECT 1\n"
		"  - name: y\n"
		"    partition: day\n"
		"    keep_runs: 2h\n"
		"    command: [\"true\"]\n"
		"warehouses:\n"
		"  - {name: s, postgres: dbname=s}\n"
		"max_catchup: 5\n"
		"max_backfill: 10\n"
		"keep_runs: 30d\n"
		"max_concurrency: 8\n");

	ck_assert_int_eq(cfg->jobs[0].max_catchup, 5);
	ck_assert_int_eq(cfg->jobs[0].max_backfill, 10);
	ck_assert_int_eq(cfg->jobs[0].concurrency, 6);
	ck_assert_int_eq(cfg->jobs[0].keep_runs, 30 * 86400);
	ck_assert_int_eq(cfg->jobs[1].keep_runs, 7200);
	ck_assert_int_eq(cfg->jobs[0].warehouse, 0);
	ck_assert_int_eq(cfg->warehouses[0].max_connections, 4);
	config_unref(cfg);
}
END_TEST

/* start and end at each grain: a date maps to the partition holding it. */
START_TEST(test_dates_per_grain)
{
	struct config *cfg = load_ok(
		"jobs:\n"
		"  - {name: h, partition: hour, start: 2026-01-01, end: 2026-01-02, command: [x]}\n"
		"  - {name: h2, partition: hour, start: 2026-01-01T05, end: 2026-01-01T05, command: [x]}\n"
		"  - {name: w, partition: week, start: 2026-01-07, end: 2026-01-11, command: [x]}\n"
		"  - {name: m, partition: month, start: 2024-02-29, end: 2024-03-01, command: [x]}\n"
		"  - {name: d, partition: day, end: 2026-12-31, command: [x]}\n"
		"  - {name: n, partition: day, command: [x]}\n");
	const struct job_def *j;

	j = config_job(cfg, "h");
	ck_assert_int_eq(j->start, day(2026, 1, 1) * 24);
	ck_assert_int_eq(j->end, day(2026, 1, 2) * 24 + 23);
	j = config_job(cfg, "h2");
	ck_assert_int_eq(j->start, day(2026, 1, 1) * 24 + 5);
	ck_assert_int_eq(j->end, j->start);
	j = config_job(cfg, "w");
	ck_assert_int_eq(j->start, part_of_day(GRAIN_WEEK, day(2026, 1, 5)));
	ck_assert_int_eq(j->end, j->start);
	j = config_job(cfg, "m");
	ck_assert_int_eq(j->start, part_of_day(GRAIN_MONTH, day(2024, 2, 1)));
	ck_assert_int_eq(j->end, j->start + 1);
	j = config_job(cfg, "d");
	ck_assert(!j->has_start);
	ck_assert(j->has_end);
	ck_assert_int_eq(j->end, day(2026, 12, 31));
	/* no upstream, no start: allowed, backfills only */
	j = config_job(cfg, "n");
	ck_assert(!j->has_start);
	ck_assert(!j->has_end);
	ck_assert_uint_eq(j->nupstream, 0);
	config_unref(cfg);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Files: config_load and sql_file                                     */
/* ------------------------------------------------------------------ */

/* Write `text` to dir/name. */
static void
write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Remove dir/name. */
static void
remove_file(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	unlink(path);
}

/* A valid fixture through config_load: real path, folder, hash. */
START_TEST(test_load_file)
{
	struct config *cfg;
	struct err err;
	char *real = realpath(FX "good-minimal.yaml", NULL);
	char want[PATH_MAX + 64];

	ck_assert_ptr_nonnull(real);
	ck_assert_msg(config_load(FX "good-minimal.yaml", &cfg, &err) == 0,
		      "%s", err.msg);
	ck_assert_str_eq(cfg->path, real);
	*strrchr(real, '/') = '\0';
	ck_assert_str_eq(cfg->dir, real);
	snprintf(want, sizeof want, "%s/state/state.db", real);
	ck_assert_str_eq(cfg->state_db, want);
	ck_assert_uint_eq(cfg->njobs, 1);
	ck_assert_str_eq(cfg->jobs[0].command[2], "{partition}");
	ck_assert_int_eq(cfg->topo[0], 0);
	free(real);
	config_unref(cfg);
}
END_TEST

/* sql_file is read at load time, relative to the config's folder; its
 * wall-clock reads are refused with their position inside the file. */
START_TEST(test_sql_file)
{
	char dir[] = "/tmp/test_config.XXXXXX";
	char cfgpath[PATH_MAX], jobs[PATH_MAX], want[PATH_MAX * 2];
	struct config *cfg;
	struct err err;
	const char *sql = "DELETE FROM t WHERE dt = :partition;\n"
			  "INSERT INTO t SELECT * FROM raw WHERE dt = :partition;\n";

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(jobs, sizeof jobs, "%s/jobs", dir);
	ck_assert_int_eq(mkdir(jobs, 0700), 0);
	write_file(dir, "jobs/x.sql", sql);
	write_file(dir, "jobs/clock.sql",
		   "-- fine: current_date\nSELECT 1;\nSELECT  date('now');\n");
	write_file(dir, "jobs/empty.sql", "");
	snprintf(cfgpath, sizeof cfgpath, "%s/backfilld.yaml", dir);
	write_file(dir, "backfilld.yaml",
		   WH "  - name: x\n    warehouse: sales\n    partition: day\n"
		   "    sql_file: jobs/x.sql\n");
	ck_assert_msg(config_load(cfgpath, &cfg, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(cfg->jobs[0].sql, sql);
	snprintf(want, sizeof want, "%s/jobs/x.sql", dir);
	ck_assert_str_eq(cfg->jobs[0].sql_file, want);
	snprintf(want, sizeof want, "%s/sales.db", dir);
	ck_assert_str_eq(cfg->warehouses[0].path, want);
	config_unref(cfg);

	write_file(dir, "backfilld.yaml",
		   WH "  - name: x\n    warehouse: sales\n    partition: day\n"
		   "    sql_file: jobs/clock.sql\n");
	ck_assert_int_eq(config_load(cfgpath, &cfg, &err), -1);
	snprintf(want, sizeof want,
		 "%s:8:15: job \"x\" reads the wall clock ('now') at jobs/clock.sql:3:14: take the date from :partition, or set allow_wall_clock: true",
		 cfgpath);
	ck_assert_str_eq(err.msg, want);

	write_file(dir, "backfilld.yaml",
		   WH "  - name: x\n    warehouse: sales\n    partition: day\n"
		   "    allow_wall_clock: true\n    sql_file: jobs/clock.sql\n");
	ck_assert_msg(config_load(cfgpath, &cfg, &err) == 0, "%s", err.msg);
	config_unref(cfg);

	/* transaction control, refused with its position inside the file */
	write_file(dir, "jobs/commit.sql",
		   "-- COMMIT in a comment is fine\nSELECT 'COMMIT';\n\n  end;\n");
	write_file(dir, "backfilld.yaml",
		   WH "  - name: x\n    warehouse: sales\n    partition: day\n"
		   "    sql_file: jobs/commit.sql\n");
	ck_assert_int_eq(config_load(cfgpath, &cfg, &err), -1);
	snprintf(want, sizeof want,
		 "%s:8:15: job \"x\" statement 2 controls the run's transaction (END) at jobs/commit.sql:4:3: backfilld begins and commits each partition's transaction itself; remove it (to nest one, use SAVEPOINT name ... RELEASE name)",
		 cfgpath);
	ck_assert_str_eq(err.msg, want);

	write_file(dir, "backfilld.yaml",
		   WH "  - name: x\n    warehouse: sales\n    partition: day\n"
		   "    sql_file: jobs/empty.sql\n");
	ck_assert_int_eq(config_load(cfgpath, &cfg, &err), -1);
	snprintf(want, sizeof want,
		 "%s:8:5: job \"x\": sql_file \"jobs/empty.sql\" (%s/jobs/empty.sql) must hold SQL text: it is empty",
		 cfgpath, dir);
	ck_assert_str_eq(err.msg, want);

	write_file(dir, "backfilld.yaml",
		   WH "  - name: x\n    warehouse: sales\n    partition: day\n"
		   "    sql_file: jobs\n");
	ck_assert_int_eq(config_load(cfgpath, &cfg, &err), -1);
	snprintf(want, sizeof want,
		 "%s:8:5: job \"x\": cannot read sql_file \"jobs\" (%s/jobs): Is a directory",
		 cfgpath, dir);
	ck_assert_str_eq(err.msg, want);

	/* a FIFO would block the load (and a reload, on the loop) for ever */
	snprintf(want, sizeof want, "%s/jobs/pipe.sql", dir);
	ck_assert_int_eq(mkfifo(want, 0600), 0);
	write_file(dir, "backfilld.yaml",
		   WH "  - name: x\n    warehouse: sales\n    partition: day\n"
		   "    sql_file: jobs/pipe.sql\n");
	ck_assert_int_eq(config_load(cfgpath, &cfg, &err), -1);
	snprintf(want, sizeof want,
		 "%s:8:5: job \"x\": cannot read sql_file \"jobs/pipe.sql\" (%s/jobs/pipe.sql): it is a FIFO, not a regular file",
		 cfgpath, dir);
	ck_assert_str_eq(err.msg, want);
	remove_file(dir, "jobs/pipe.sql");

	/* at most 1 MiB of SQL */
	{
		char *big = malloc(1024 * 1024 + 2);

		ck_assert_ptr_nonnull(big);
		memset(big, ' ', 1024 * 1024 + 1);
		memcpy(big, "SELECT 1", 8);
		big[1024 * 1024 + 1] = '\0';
		write_file(dir, "jobs/big.sql", big);
		big[1024 * 1024] = '\0';
		write_file(dir, "jobs/max.sql", big);
		free(big);
	}
	write_file(dir, "backfilld.yaml",
		   WH "  - name: x\n    warehouse: sales\n    partition: day\n"
		   "    sql_file: jobs/big.sql\n");
	ck_assert_int_eq(config_load(cfgpath, &cfg, &err), -1);
	snprintf(want, sizeof want,
		 "%s:8:5: job \"x\": cannot read sql_file \"jobs/big.sql\" (%s/jobs/big.sql): it is 1048577 bytes, more than 1048576",
		 cfgpath, dir);
	ck_assert_str_eq(err.msg, want);
	write_file(dir, "backfilld.yaml",
		   WH "  - name: x\n    warehouse: sales\n    partition: day\n"
		   "    sql_file: jobs/max.sql\n");
	ck_assert_msg(config_load(cfgpath, &cfg, &err) == 0, "%s", err.msg);
	config_unref(cfg);
	remove_file(dir, "jobs/big.sql");
	remove_file(dir, "jobs/max.sql");

	/* the configuration itself: at most 4 MiB */
	{
		FILE *f = fopen(cfgpath, "w");

		ck_assert_ptr_nonnull(f);
		fputs("# padding\n", f);
		for (int i = 0; i < 4 * 1024 * 1024 - 10; i++)
			fputc(' ', f);
		fputc('\n', f);
		fclose(f);
	}
	ck_assert_int_eq(config_load(cfgpath, &cfg, &err), -1);
	snprintf(want, sizeof want,
		 "%s: cannot read the configuration: it is 4194305 bytes, more than 4194304",
		 cfgpath);
	ck_assert_str_eq(err.msg, want);

	remove_file(dir, "jobs/x.sql");
	remove_file(dir, "jobs/clock.sql");
	remove_file(dir, "jobs/empty.sql");
	remove_file(dir, "backfilld.yaml");
	rmdir(jobs);
	rmdir(dir);
}
END_TEST

/* 40,000 nested '[' are refused at the 64th level, at once (libyaml alone
 * took 9 s over them: its cost is quadratic in the nesting). */
START_TEST(test_deep_nesting)
{
	size_t n = 40000;
	char *yaml = malloc(2 * n + 16);
	struct config *cfg;
	struct err err;

	ck_assert_ptr_nonnull(yaml);
	memcpy(yaml, "x: ", 3);
	memset(yaml + 3, '[', n);
	memset(yaml + 3 + n, ']', n);
	yaml[3 + 2 * n] = '\0';
	ck_assert_int_eq(config_load_string("deep.yaml", yaml, strlen(yaml),
					    &cfg, &err), -1);
	ck_assert_str_eq(err.msg, "deep.yaml:1:67: nesting deeper than 64 levels");
	/* 63 levels under the top mapping are fine for the YAML (and then
	 * refused as an unknown key) */
	memset(yaml + 3, '[', 63);
	memset(yaml + 3 + 63, ']', 63);
	yaml[3 + 126] = '\0';
	ck_assert_int_eq(config_load_string("deep.yaml", yaml, strlen(yaml),
					    &cfg, &err), -1);
	ck_assert_ptr_null(strstr(err.msg, "nesting"));
	free(yaml);
}
END_TEST


/* ------------------------------------------------------------------ */
/* include:                                                            */
/* ------------------------------------------------------------------ */

/*
 * Refused include fixtures (tests/fixtures/config/include/): `main` is
 * loaded, and the message must be exactly `msg` with "@" replaced by the
 * fixtures' real include/ folder (included files are named by their
 * absolute path) and "^" by the main file's path as given.
 */
struct inc_fixture {
	const char *main;
	const char *msg;
};

static const struct inc_fixture inc_fixtures[] = {
	{ "cycle/main.yaml",
	  "@/cycle/b.yaml:5:11: include cycle @/cycle/a.yaml -> @/cycle/b.yaml -> @/cycle/a.yaml; remove one of these includes" },
	{ "missing.yaml",
	  "^:4:5: include \"nope.yaml\": cannot read @/nope.yaml: No such file or directory; create it or remove it from include:" },
	/* a typo (job.d for jobs.d): an error, not zero jobs */
	{ "nomatch.yaml",
	  "^:4:5: include \"job.d/*.yaml\": the pattern matches no file (it looks in @); correct it, or write it \"- optional: PATTERN\" if it may match nothing" },
	{ "badoptional.yaml",
	  "^:3:5: include must be a sequence of file names or glob patterns (each maybe as optional: PATTERN), got a mapping" },
	{ "dup/main.yaml",
	  "@/dup/jobs.d/20-second.yaml:5:11: duplicate job name \"x\": also defined at @/dup/jobs.d/10-first.yaml:3; job names must be unique across all included files" },
	{ "badkey/main.yaml",
	  "@/badkey/jobs.d/a.yaml:5:1: unknown key \"jbos\" at the top level; did you mean \"jobs\"?" },
	{ "setting/main.yaml",
	  "@/setting/jobs.d/a.yaml:5:1: \"max_catchup\" is a setting of the main configuration file, not of an included one (which holds only jobs:, warehouses: and include:); move it to ^" },
	{ "badjob/main.yaml",
	  "@/badjob/jobs.d/a.yaml:4:16: job \"a\": partition must be one of hour, day, week, month, quarter, year, none, got \"dya\"" },
};

#define NINC (int)(sizeof inc_fixtures / sizeof inc_fixtures[0])

/* s with "@" replaced by at and "^" by caret, into out. */
static void
subst(const char *s, const char *at, const char *caret, char *out, size_t n)
{
	size_t o = 0;

	for (; *s != '\0' && o + 1 < n; s++) {
		const char *r = *s == '@' ? at : *s == '^' ? caret : NULL;

		if (r != NULL)
			o += (size_t)snprintf(out + o, n - o, "%s", r);
		else
			out[o++] = *s;
	}
	out[o < n ? o : n - 1] = '\0';
}

/* Numbers are decimal only: cfg_decimal's forms, and plain values (and a
 * quoted percentage) still taken. */
START_TEST(test_decimal_only)
{
	static const char *const ok_int[] = { "0", "7", "-3", "2026", NULL };
	static const char *const ok_real[] = { "0", "1.5", ".5", "5.", "-2e3",
		"+1E-2", "0.25", NULL };
	static const char *const bad[] = { "", "-", ".", "0x10", "0X1f",
		"010", "00", "0o10", "1_000", "inf", "nan", "1e", "1.5.2",
		" 1", "1 ", "+-1", NULL };
	struct config *cfg;
	size_t i;

	for (i = 0; ok_int[i] != NULL; i++)
		ck_assert_msg(cfg_decimal(ok_int[i], false), "%s", ok_int[i]);
	for (i = 0; ok_real[i] != NULL; i++)
		ck_assert_msg(cfg_decimal(ok_real[i], true), "%s", ok_real[i]);
	ck_assert(!cfg_decimal("1.5", false));
	ck_assert(!cfg_decimal("+1", false));
	for (i = 0; bad[i] != NULL; i++) {
		ck_assert_msg(!cfg_decimal(bad[i], false), "%s", bad[i]);
		ck_assert_msg(!cfg_decimal(bad[i], true), "%s", bad[i]);
	}
	cfg = load_ok("max_concurrency: 4\n"
		      "warehouses:\n  - name: s\n    sqlite: s.db\n"
		      "jobs:\n  - name: x\n    warehouse: s\n"
		      "    partition: day\n    batch: 3\n    catchup: true\n"
		      "    sql: SELECT 1\n"
		      "    reconcile:\n      - name: r\n"
		      "        source: {warehouse: s, sql: SELECT 1}\n"
		      "        target: SELECT 1\n        tolerance: \"0.5%\"\n");
	ck_assert_int_eq(cfg->max_concurrency, 4);
	ck_assert_int_eq(cfg->jobs[0].batch_size, 3);
	ck_assert(cfg->jobs[0].catchup);
	ck_assert(cfg->jobs[0].reconciles[0].tolerance.pct);
	ck_assert(cfg->jobs[0].reconciles[0].tolerance.value == 0.5);
	config_unref(cfg);
}
END_TEST

/* A SQLite warehouse's file is read, never created: an empty file and a
 * database pass, anything else is named; a missing file is left to the
 * start's check (it says "does not exist"). */
START_TEST(test_wh_sqlite_header)
{
	char dir[] = "/tmp/bf-whXXXXXX", path[PATH_MAX], why[160] = "";
	struct stat st;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/w.db", dir);
	ck_assert_int_eq(config_wh_sqlite_header(path, why, sizeof why), 0);
	ck_assert_int_eq(stat(path, &st), -1); /* not created */
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(config_wh_sqlite_header(path, why, sizeof why), 0);
	f = fopen(path, "w");
	fputs("name,amount\n2026-01-01,3\n", f);
	fclose(f);
	ck_assert_int_eq(config_wh_sqlite_header(path, why, sizeof why), -1);
	ck_assert_str_eq(why, "it is not an SQLite database (25 bytes that do"
			 " not start with SQLite's header)");
	f = fopen(path, "w");
	fwrite("SQLite format 3\0", 1, 16, f);
	fwrite("\x10\x00", 1, 2, f);
	fclose(f);
	ck_assert_int_eq(config_wh_sqlite_header(path, why, sizeof why), 0);
	ck_assert_int_eq(config_wh_sqlite_header(dir, why, sizeof why), -1);
	ck_assert_str_eq(why, "it is not a regular file");
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Each refused include fixture names the file, line and column that has
 * the error. */
START_TEST(test_include_refused)
{
	const struct inc_fixture *f = &inc_fixtures[_i];
	char path[PATH_MAX], want[PATH_MAX * 4 + ERR_MSG_MAX], *real;
	struct config *cfg = (struct config *)1;
	struct err err = { 0 };

	real = realpath(FX "include", NULL);
	ck_assert_ptr_nonnull(real);
	snprintf(path, sizeof path, "%sinclude/%s", FX, f->main);
	subst(f->msg, real, path, want, sizeof want);
	ck_assert_int_eq(config_load(path, &cfg, &err), -1);
	ck_assert_ptr_null(cfg);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, want);
	free(real);
}
END_TEST

/* A valid include: jobs and warehouses of every file in order (main
 * first, then the matches sorted), paths relative to the file that names
 * them, each job's file and line, defaults from the main file, upstream
 * across files, and optional entries that match nothing. */
START_TEST(test_include_good)
{
	struct config *cfg = NULL;
	struct err err = { 0 };
	char *real, want[PATH_MAX];
	const struct job_def *j;

	real = realpath(FX "include/good", NULL);
	ck_assert_ptr_nonnull(real);
	ck_assert_msg(config_load(FX "include/good/main.yaml", &cfg, &err) == 0,
		      "%s", err.msg);
	ck_assert_uint_eq(cfg->nfiles, 3);
	ck_assert_uint_eq(cfg->njobs, 3);
	ck_assert_str_eq(cfg->jobs[0].name, "main_job");
	ck_assert_str_eq(cfg->jobs[1].name, "fct");
	ck_assert_str_eq(cfg->jobs[2].name, "mart");
	snprintf(want, sizeof want, "%s/main.yaml", real);
	ck_assert_str_eq(cfg->jobs[0].file, want);
	ck_assert_int_eq(cfg->jobs[0].pos.line, 11);
	j = config_job(cfg, "fct");
	snprintf(want, sizeof want, "%s/jobs.d/10-fct.yaml", real);
	ck_assert_str_eq(j->file, want);
	ck_assert_int_eq(j->pos.line, 5);
	ck_assert_int_eq(j->pos.col, 5);
	ck_assert_int_eq(j->max_catchup, 9);
	j = config_job(cfg, "mart");
	snprintf(want, sizeof want, "%s/jobs.d/../sql/mart.sql", real);
	ck_assert_str_eq(j->sql_file, want);
	ck_assert_str_eq(j->sql, "SELECT :partition_start\n");
	ck_assert_int_eq(j->upstream_idx[0], 1);
	ck_assert_str_eq(cfg->warehouses[j->warehouse].name, "dw");
	ck_assert_uint_eq(cfg->nwarehouses, 2);
	snprintf(want, sizeof want, "%s/jobs.d/dw.db", real);
	ck_assert_str_eq(cfg->warehouses[1].path, want);
	snprintf(want, sizeof want, "%s/jobs.d/10-fct.yaml", real);
	ck_assert_str_eq(cfg->warehouses[1].file, want);
	ck_assert_uint_eq(cfg->jobs[1].ndownstream, 2);
	config_unref(cfg);
	free(real);
}
END_TEST

/* Includes nested deeper than CONFIG_INCLUDE_DEPTH are refused; a file
 * included twice is refused naming the first includer. */
START_TEST(test_include_bounds)
{
	char dir[] = "/tmp/bf-inc-XXXXXX", name[64], text[128], *real;
	char path[PATH_MAX], want[PATH_MAX * 3 + 256];
	struct config *cfg = (struct config *)1;
	struct err err = { 0 };
	int i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	real = realpath(dir, NULL);
	write_file(dir, "main.yaml", "include: [f0.yaml]\n");
	for (i = 0; i <= CONFIG_INCLUDE_DEPTH; i++) {
		snprintf(name, sizeof name, "f%d.yaml", i);
		snprintf(text, sizeof text, "include: [f%d.yaml]\n", i + 1);
		write_file(dir, name, text);
	}
	snprintf(name, sizeof name, "f%d.yaml", CONFIG_INCLUDE_DEPTH + 1);
	write_file(dir, name, "jobs: []\n");
	snprintf(path, sizeof path, "%s/main.yaml", dir);
	ck_assert_int_eq(config_load(path, &cfg, &err), -1);
	snprintf(want, sizeof want,
		 "%s/f%d.yaml:1:11: include \"f%d.yaml\": includes nested deeper than %d levels; include these files from a higher level",
		 real, CONFIG_INCLUDE_DEPTH - 1, CONFIG_INCLUDE_DEPTH,
		 CONFIG_INCLUDE_DEPTH);
	ck_assert_str_eq(err.msg, want);

	write_file(dir, "main.yaml", "include: [a.yaml, b.yaml]\n");
	write_file(dir, "a.yaml", "jobs: []\n");
	write_file(dir, "b.yaml", "include: [a.yaml]\n");
	ck_assert_int_eq(config_load(path, &cfg, &err), -1);
	snprintf(want, sizeof want,
		 "%s/b.yaml:1:11: include \"a.yaml\": %s/a.yaml is already included by %s; include each file once",
		 real, real, path);
	ck_assert_str_eq(err.msg, want);
	for (i = 0; i <= CONFIG_INCLUDE_DEPTH + 1; i++) {
		snprintf(name, sizeof name, "%s/f%d.yaml", dir, i);
		unlink(name);
	}
	snprintf(name, sizeof name, "%s/a.yaml", dir);
	unlink(name);
	snprintf(name, sizeof name, "%s/b.yaml", dir);
	unlink(name);
	unlink(path);
	rmdir(dir);
	free(real);
}
END_TEST

/* Several hosts: state: postgres:, node:, lease:, nodes:, and a
 * cluster_hash that each node's own node: line does not change. */
START_TEST(test_cluster_values)
{
	static const char yaml[] =
		"state:\n"
		"  postgres: \"host=db1 dbname=backfilld\"\n"
		"  password_file: state.pass\n"
		"node: etl-2\n"
		"lease: 5s\n"
		"jobs:\n"
		"  - name: export_daily\n"
		"    partition: day\n"
		"    command: [x]\n"
		"    nodes: [etl-1, etl-3]\n"
		"  - name: any\n"
		"    partition: day\n"
		"    command: [x]\n";
	struct config *cfg = load_ok(yaml), *other, *changed;
	char *text = strdup(yaml);

	ck_assert(config_is_cluster(cfg));
	ck_assert_ptr_null(cfg->state_db);
	ck_assert_str_eq(cfg->state_conninfo, "host=db1 dbname=backfilld");
	ck_assert_str_eq(cfg->state_password_file,
			 "/srv/bf/conf/state.pass");
	ck_assert_str_eq(cfg->node, "etl-2");
	ck_assert_int_eq(cfg->lease, 5);
	ck_assert_uint_eq(cfg->jobs[0].nnodes, 2);
	ck_assert_str_eq(cfg->jobs[0].nodes[0], "etl-1");
	ck_assert_str_eq(cfg->jobs[0].nodes[1], "etl-3");
	ck_assert_uint_eq(cfg->jobs[1].nnodes, 0);
	ck_assert_ptr_null(cfg->jobs[1].nodes);

	/* another node's file: only node: differs, so cluster_hash agrees
	 * and file_hash does not */
	memcpy(strstr(text, "etl-2"), "etl-9", 5);
	other = load_ok(text);
	ck_assert_str_eq(other->node, "etl-9");
	ck_assert_str_eq(other->cluster_hash, cfg->cluster_hash);
	ck_assert_str_ne(other->file_hash, cfg->file_hash);
	/* a different lease is a different configuration */
	memcpy(strstr(text, "5s"), "7s", 2);
	changed = load_ok(text);
	ck_assert_str_ne(changed->cluster_hash, cfg->cluster_hash);
	/* nodes: is not part of what a run computes */
	ck_assert_str_eq(cfg->jobs[0].code_version,
			 changed->jobs[0].code_version);
	config_unref(changed);
	config_unref(other);
	config_unref(cfg);
	free(text);
}
END_TEST

/* Defaults of several hosts: node is the host name, lease 10s; with one
 * host (no state:), state_db keeps its default. */
START_TEST(test_cluster_defaults)
{
	struct config *cfg = load_ok("state: {postgres: \"dbname=b\"}\n");
	char host[256];

	ck_assert_int_eq(gethostname(host, sizeof host), 0);
	ck_assert(config_is_cluster(cfg));
	ck_assert_str_eq(cfg->node, host);
	ck_assert_int_eq(cfg->lease, CONFIG_LEASE_DEFAULT);
	ck_assert_ptr_null(cfg->state_password_file);
	config_unref(cfg);

	cfg = load_ok("jobs: []\n");
	ck_assert(!config_is_cluster(cfg));
	ck_assert_ptr_null(cfg->state_conninfo);
	ck_assert_str_eq(cfg->state_db, "/var/lib/backfilld/state.db");
	ck_assert_str_eq(cfg->node, host);
	/* without node:, the cluster hash is the file hash */
	ck_assert_str_eq(cfg->cluster_hash, cfg->file_hash);
	config_unref(cfg);
}
END_TEST

/* Suite: fixtures, inline errors, wall clock, values, files. */
/* backfillctl --config: the socket: alone, from a file the daemon would
 * refuse too; a file that is not YAML has its socket: line read alone,
 * with a warning naming the YAML error's position. */
static const struct {
	const char *name, *text, *socket, *warn, *error;
} socket_cases[] = {
	{ "relative, against the file's folder", "socket: run/b.sock\n",
	  "/etc/bf/run/b.sock", "", NULL },
	{ "absolute", "state_db: s.db\nsocket: /run/x.sock\n", "/run/x.sock", "",
	  NULL },
	{ "none given", "state_db: s.db\n", NULL, "", NULL },
	{ "an empty file", "", NULL, "", NULL },
	{ "a file the daemon refuses (unknown key, bad job)",
	  "bogus: 1\nsocket: /run/y.sock\njobs:\n  - name: 1x\n", "/run/y.sock",
	  "", NULL },
	{ "invalid YAML after it", "socket: /run/z.sock\njobs:\n\t- name: x\n",
	  "/run/z.sock", "", NULL },
	{ "invalid YAML before it",
	  "jobs: [a\nsocket: \"/run/q.sock\"  # the socket\n", "/run/q.sock",
	  "x.yaml:2:7: invalid YAML: did not find expected ',' or ']';"
	  " read its socket: line alone", NULL },
	{ "invalid YAML, a comment after a plain value",
	  "a: [\nsocket: /run/p.sock # here\n", "/run/p.sock", NULL, NULL },
	{ "invalid YAML without a socket: line", "jobs: [a\n  socket: /no\n",
	  NULL, NULL, NULL },
	{ "a socket: key of a job is not the socket",
	  "jobs:\n  - name: a\n    socket: /no\nsocket: /yes\n", "/yes", "",
	  NULL },
	{ "a sequence", "socket: [a]\n", NULL, "",
	  "x.yaml:1:9: socket must be a socket path, got a sequence" },
	{ "empty", "socket: \"\"\n", NULL, "",
	  "x.yaml:1:9: socket must be a socket path, got nothing" },
};

START_TEST(test_socket_only)
{
	for (size_t i = 0; i < sizeof socket_cases / sizeof socket_cases[0]; i++) {
		char warn[512], *sock = NULL;
		struct err e;
		int rc;

		err_clear(&e);
		rc = config_socket_string("/etc/bf/x.yaml", socket_cases[i].text,
					  strlen(socket_cases[i].text), &sock,
					  warn, sizeof warn, &e);
		if (socket_cases[i].error != NULL) {
			ck_assert_msg(rc == -1, "%s: accepted", socket_cases[i].name);
			ck_assert_msg(strstr(e.msg, socket_cases[i].error) != NULL,
				      "%s: error %s", socket_cases[i].name, e.msg);
			ck_assert_ptr_null(sock);
			continue;
		}
		ck_assert_msg(rc == 0, "%s: %s", socket_cases[i].name, e.msg);
		if (socket_cases[i].socket == NULL)
			ck_assert_msg(sock == NULL, "%s: socket %s",
				      socket_cases[i].name, sock);
		else
			ck_assert_msg(sock != NULL &&
				      strcmp(sock, socket_cases[i].socket) == 0,
				      "%s: socket %s", socket_cases[i].name,
				      sock ? sock : "(none)");
		if (socket_cases[i].warn != NULL)
			ck_assert_msg(strcmp(warn, socket_cases[i].warn) == 0 ||
				      (socket_cases[i].warn[0] != '\0' &&
				       strstr(warn, socket_cases[i].warn) != NULL),
				      "%s: warning \"%s\"", socket_cases[i].name,
				      warn);
		else
			ck_assert_msg(strstr(warn, "invalid YAML") != NULL,
				      "%s: warning \"%s\"", socket_cases[i].name,
				      warn);
		free(sock);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* The key tables                                                      */
/* ------------------------------------------------------------------ */

/* Where a table's mapping is in a file: the YAML before it, the indent
 * and line of its keys, and the context its messages name. */
struct table_at {
	const struct cfg_key *keys;
	const char *before;
	int indent, line;
	const char *ctx;   /* "" at the top level, else "CTX: " */
	const char *named; /* a key `before` already holds, or NULL */
};

static const struct table_at tables_at[] = {
	{ cfg_top_keys, "", 0, 1, "", NULL },
	{ cfg_state_keys, "state:\n", 2, 2, "state: ", NULL },
	{ cfg_wh_keys, "warehouses:\n  - name: w\n", 4, 3,
	  "warehouse \"w\": ", "name" },
	{ cfg_throttle_keys, "warehouses:\n  - name: w\n    throttle:\n", 6, 4,
	  "throttle of warehouse \"w\": ", NULL },
	{ cfg_job_keys, "jobs:\n  - name: x\n", 4, 3, "job \"x\": ", "name" },
	{ cfg_check_keys, "jobs:\n  - name: x\n    checks:\n      - name: c\n",
	  8, 5, "check \"c\" of job \"x\": ", "name" },
	{ cfg_recon_keys, "jobs:\n  - name: x\n    reconcile:\n      - name: r\n",
	  8, 5, "reconcile \"r\" of job \"x\": ", "name" },
	{ cfg_recon_source_keys, "jobs:\n  - name: x\n    reconcile:\n"
	  "      - name: r\n        source:\n", 10, 6,
	  "reconcile \"r\" of job \"x\": ", NULL },
	{ cfg_metric_keys, "jobs:\n  - name: x\n    metrics:\n      m:\n", 8, 5,
	  "metric \"m\" of job \"x\": ", NULL },
	{ cfg_trend_keys, "jobs:\n  - name: x\n    metrics:\n      m:\n"
	  "        trend:\n", 10, 6, "metric \"m\" of job \"x\": ", NULL },
	{ cfg_late_keys, "jobs:\n  - name: x\n    late_data:\n", 6, 4,
	  "late_data of job \"x\": ", NULL },
	{ cfg_ol_keys, "openlineage:\n", 2, 2, "openlineage: ", NULL },
};
#define NTABLES_AT (sizeof tables_at / sizeof tables_at[0])

/* Every key of a mapping given a value of the wrong shape (a sequence for
 * a scalar, a scalar for the others) is refused at the value with its
 * table's own wording of what it must be. */
START_TEST(test_tables_wrong_shape)
{
	const struct table_at *t = &tables_at[_i];
	const struct cfg_key *k;
	char text[512], msg[512];

	for (k = t->keys; k->name != NULL; k++) {
		bool scalar = k->type == YAML_SCALAR_NODE;

		if (k->type == YAML_NO_NODE ||
		    (t->named != NULL && strcmp(k->name, t->named) == 0))
			continue;
		snprintf(text, sizeof text, "%s%*s%s: %s\n", t->before,
			 t->indent, "", k->name, scalar ? "[1]" : "x");
		snprintf(msg, sizeof msg,
			 "inline.yaml:%d:%d: %s%s must be %s, got %s", t->line,
			 t->indent + (int)strlen(k->name) + 3, t->ctx, k->name,
			 k->what, scalar ? "a sequence" : "\"x\"");
		load_bad(text, msg);
	}
}
END_TEST

/* Every key of a mapping misspelt (a letter added) is refused at the key
 * as unknown in that mapping, and its own table suggests it. */
START_TEST(test_tables_suggest)
{
	const struct table_at *t = &tables_at[_i];
	const struct cfg_key *k;
	char text[512], msg[512], where[128];

	if (t->ctx[0] == '\0')
		snprintf(where, sizeof where, "at the top level");
	else
		snprintf(where, sizeof where, "in %.*s", (int)strlen(t->ctx) - 2,
			 t->ctx);
	for (k = t->keys; k->name != NULL; k++) {
		snprintf(text, sizeof text, "%s%*s%sx: 1\n", t->before,
			 t->indent, "", k->name);
		snprintf(msg, sizeof msg,
			 "inline.yaml:%d:%d: unknown key \"%sx\" %s; did you mean \"%s\"?",
			 t->line, t->indent + 1, k->name, where, k->name);
		load_bad(text, msg);
	}
}
END_TEST

/* Every mapping's table is in cfg_tables, each key once, each row whole. */
START_TEST(test_tables_rows)
{
	const struct cfg_table *t;
	const struct cfg_key *k, *o;
	size_t n = 0, c;

	for (t = cfg_tables; t->name != NULL; t++, n++) {
		for (k = t->keys; k->name != NULL; k++) {
			ck_assert_msg(k->fn != NULL && k->what != NULL &&
				      k->what[0] != '\0', "%s: %s", t->name,
				      k->name);
			ck_assert_msg(strspn(k->name, "abcdefghijklmnopqrstuvwxyz_") ==
				      strlen(k->name), "%s", k->name);
			for (o = t->keys; o < k; o++)
				ck_assert_msg(strcmp(o->name, k->name) != 0,
					      "%s: %s twice", t->name, k->name);
		}
	}
	for (c = 0; c < NTABLES_AT; c++) {
		for (t = cfg_tables; t->name != NULL; t++)
			if (t->keys == tables_at[c].keys)
				break;
		ck_assert_ptr_nonnull(t->name);
	}
	ck_assert_uint_eq(n, NTABLES_AT + 1); /* and cfg_inc_keys */
}
END_TEST

/* Whether `word` is in text as a whole word. */
static bool
has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *c = strstr(text, word); c != NULL;
	     c = strstr(c + 1, word)) {
		char a = c == text ? ' ' : c[-1], b = c[n];

		if (!(a == '_' || a == '\\' || (a >= 'a' && a <= 'z')) &&
		    !(b == '_' || b == '\\' || (b >= 'a' && b <= 'z')))
			return true;
	}
	return false;
}

/* Every key of every table is in backfilld.yaml(5), the key-by-key
 * reference (where scdoc's '_' is written "\_", or not inside a span). */
START_TEST(test_tables_documented)
{
	const char *man = FIXTURES_DIR "/../../docs/man/backfilld.yaml.5.scd";
	const struct cfg_table *t;
	const struct cfg_key *k;
	char *text, esc[128];
	FILE *f = fopen(man, "r");
	long len;

	ck_assert_msg(f != NULL, "%s: %s", man, strerror(errno));
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	for (t = cfg_tables; t->name != NULL; t++)
		for (k = t->keys; k->name != NULL; k++) {
			size_t o = 0;

			for (const char *c = k->name;
			     *c != '\0' && o + 3 < sizeof esc; c++) {
				if (*c == '_')
					esc[o++] = '\\';
				esc[o++] = *c;
			}
			esc[o] = '\0';
			ck_assert_msg(has_word(text, k->name) ||
				      has_word(text, esc),
				      "key %s (%s) is not in %s", k->name,
				      t->name, man);
		}
	free(text);
}
END_TEST

static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("refused");
	tcase_add_loop_test(tc, test_bad_fixture, 0, NBAD);
	tcase_add_test(tc, test_bad_unknown_key_full);
	tcase_add_test(tc, test_unreadable);
	tcase_add_loop_test(tc, test_bad_inline, 0, NBADI);
	tcase_add_test(tc, test_deep_nesting);
	suite_add_tcase(s, tc);

	tc = tcase_create("wall_clock");
	tcase_add_loop_test(tc, test_wall_clock, 0, NWALL);
	suite_add_tcase(s, tc);

	tc = tcase_create("values");
	tcase_add_test(tc, test_full_values);
	tcase_add_test(tc, test_full_needs_one_kind);
	tcase_add_test(tc, test_code_version);
	tcase_add_test(tc, test_refs);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_hooks_values);
	tcase_add_test(tc, test_socket_only);
	tcase_add_test(tc, test_defaults_order);
	tcase_add_test(tc, test_budget_chunk_values);
	tcase_add_test(tc, test_dates_per_grain);
	tcase_add_test(tc, test_cluster_values);
	tcase_add_test(tc, test_cluster_defaults);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_test(tc, test_load_file);
	tcase_add_test(tc, test_severity_values);
	tcase_add_test(tc, test_reconcile_values);
	tcase_add_test(tc, test_trend_values);
	tcase_add_test(tc, test_decimal_only);
	tcase_add_test(tc, test_wh_sqlite_header);
	tcase_add_test(tc, test_sql_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("include");
	tcase_add_loop_test(tc, test_include_refused, 0, NINC);
	tcase_add_test(tc, test_include_good);
	tcase_add_test(tc, test_include_bounds);
	suite_add_tcase(s, tc);

	tc = tcase_create("tables");
	tcase_add_loop_test(tc, test_tables_wrong_shape, 0, NTABLES_AT);
	tcase_add_loop_test(tc, test_tables_suggest, 0, NTABLES_AT);
	tcase_add_test(tc, test_tables_rows);
	tcase_add_test(tc, test_tables_documented);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
