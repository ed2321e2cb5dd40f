/*
 * test_exec.c - the executor on a real libuv loop: SQL runs on worker
 * threads against a temporary SQLite warehouse, command runs through
 * uv_spawn, timeouts, cancellation and shutdown.
 *
 * Every test waits for events by running the loop (uv_run returns once no
 * run is in flight: the executor holds the loop only while it has work)
 * and ends like libuv's test/task.h: everything closed, the loop run dry,
 * uv_loop_close() == 0.  Structs are built by hand, zero-initialised, so
 * the suite does not depend on config.c.
 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>
#include <uv.h>

#include "exec.h"
#include "tz.h"
#include "wh_commits.h"

#define SLOW_SQL \
	"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c " \
	"WHERE x < 1000000000) " \
	"INSERT INTO fct (dt, v) SELECT :partition, count(*) FROM c"

static char tmpdir[64];  /* short: paths built from it never truncate */
static char dbpath[128];
static char logdir[128];
static uv_loop_t loop;
static struct exec *ex;
static bool ex_closed;
static struct warehouse_def wh;
static struct config cfg;

/* A run with its own bookkeeping. */
struct trun {
	struct exec_run run;
	struct exec_part parts[8];
	int done;
	int started;
	struct exec *cancel_on_start; /* exec_cancel from started_cb */
	struct exec *close_on_start;  /* exec_close from started_cb */
};

/* done_cb: count calls. */
static void
trun_done_cb(struct exec_run *run)
{
	struct trun *t = run->data;

	t->done++;
}

/* closed_cb: note the executor is closed. */
static void
test_closed_cb(void *data)
{
	*(bool *)data = true;
}

/* started_cb: count, and cancel or close when asked. */
static void
trun_started_cb(struct exec_run *run)
{
	struct trun *t = run->data;

	t->started++;
	if (t->cancel_on_start != NULL)
		exec_cancel(t->cancel_on_start, run);
	if (t->close_on_start != NULL) {
		exec_close(t->close_on_start, test_closed_cb, &ex_closed);
	}
}

/* A partition's parameters: its UTC bounds and instants from its key
 * when that is a UTC day or hour (exec_part_set, as the scheduler fills
 * them), the local bounds as given. */
static void
tpart_set(struct exec_part *p, const char *key, const char *start,
	  const char *end)
{
	struct err e;
	part_t pt;

	memset(p, 0, sizeof *p);
	if (part_parse_key(GRAIN_DAY, key, &pt, &e) == 0)
		exec_part_set(p, &cal_utc[GRAIN_DAY], pt);
	else if (part_parse_key(GRAIN_HOUR, key, &pt, &e) == 0)
		exec_part_set(p, &cal_utc[GRAIN_HOUR], pt);
	snprintf(p->key, sizeof p->key, "%s", key);
	snprintf(p->start, sizeof p->start, "%s", start);
	snprintf(p->end, sizeof p->end, "%s", end);
}

/* Set up a run of jd for one partition. */
static void
trun_init(struct trun *t, const struct job_def *jd, const char *key,
	  const char *start, const char *end)
{
	memset(t, 0, sizeof *t);
	t->run.cfg = &cfg;
	t->run.job = jd;
	t->run.parts = t->parts;
	t->run.nparts = 1;
	t->run.attempt = 1;
	t->run.log_dir = logdir;
	t->run.done_cb = trun_done_cb;
	t->run.started_cb = trun_started_cb;
	t->run.data = t;
	tpart_set(&t->parts[0], key, start, end);
}

/* Add one more partition to a run. */
static void
trun_add(struct trun *t, const char *key, const char *start, const char *end)
{
	tpart_set(&t->parts[t->run.nparts++], key, start, end);
}

/* A SQL job on the test warehouse. */
static struct job_def
sql_job(const char *name, const char *sql)
{
	struct job_def jd;

	memset(&jd, 0, sizeof jd);
	jd.name = (char *)name;
	jd.warehouse = 0;
	jd.grain = GRAIN_DAY;
	jd.sql = (char *)sql;
	return jd;
}

/* A command job. */
static struct job_def
cmd_job(const char *name, char **argv)
{
	struct job_def jd;

	memset(&jd, 0, sizeof jd);
	jd.name = (char *)name;
	jd.warehouse = -1;
	jd.grain = GRAIN_DAY;
	jd.command = argv;
	for (jd.command_len = 0; argv[jd.command_len] != NULL; jd.command_len++)
		;
	return jd;
}

/* Run the loop until no run is in flight (the executor keeps the loop
 * alive while one is). */
static void
wait_runs(void)
{
	uv_run(&loop, UV_RUN_DEFAULT);
}

/* Execute SQL on the warehouse from the test's own connection. */
static void
db_exec(const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;

	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		ck_abort_msg("%s: %s", sql, msg);
	sqlite3_close(db);
}

/* One integer from the warehouse. */
static long long
db_int(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v;

	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* One text value from the warehouse, into buf. */
static const char *
db_text(const char *sql, char *buf, size_t len)
{
	sqlite3 *db;
	sqlite3_stmt *st;

	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return buf;
}

/* Read a small file into buf ("" when missing). */
static const char *
read_file(const char *path, char *buf, size_t len)
{
	FILE *f;
	size_t n;

	buf[0] = '\0';
	f = fopen(path, "r");
	if (f == NULL)
		return buf;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* nftw callback: remove one entry. */
static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Close an executor and run the loop until closed_cb. */
static void
close_exec(struct exec *e)
{
	bool closed = false;

	exec_close(e, test_closed_cb, &closed);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert(closed);
	exec_free(e);
}

/* Fixture: temp dir, warehouse with a fct table, loop, executor. */
static void
setup(void)
{
	struct err err;

	snprintf(tmpdir, sizeof tmpdir, "/tmp/backfilld-exec-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(dbpath, sizeof dbpath, "%s/wh.db", tmpdir);
	snprintf(logdir, sizeof logdir, "%s/logs", tmpdir);
	db_exec("CREATE TABLE fct (dt TEXT, v INTEGER, pstart TEXT, pend TEXT);"
	    "CREATE TABLE raw (dt TEXT, amount INTEGER);");

	memset(&wh, 0, sizeof wh);
	wh.name = "wh";
	wh.kind = WH_SQLITE;
	wh.path = dbpath;
	memset(&cfg, 0, sizeof cfg);
	cfg.refs = 1;
	cfg.warehouses = &wh;
	cfg.nwarehouses = 1;
	cfg.max_concurrency = 4;

	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ex_closed = false;
	ck_assert_msg(exec_new(&loop, 4, &ex, &err) == 0, "%s", err.msg);
}

/* Fixture end: close everything; the loop must close cleanly. */
static void
teardown(void)
{
	if (!ex_closed) {
		exec_close(ex, test_closed_cb, &ex_closed);
		uv_run(&loop, UV_RUN_DEFAULT);
	}
	ck_assert(ex_closed);
	exec_free(ex);
	ex = NULL;
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- SQL runs ---------------------------------------------------------- */

START_TEST(sql_binds_parameters)
{
	struct job_def jd = sql_job("fct_daily",
	    "INSERT INTO fct (dt, v, pstart, pend) "
	    "VALUES (:partition, 7, :partition_start, :partition_end)");
	struct trun a, b;
	char buf[128];

	trun_init(&a, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	trun_init(&b, &jd, "2026-02-08T05", "2026-02-08 05:00:00",
	    "2026-02-08 06:00:00");
	exec_submit(ex, &a.run);
	exec_submit(ex, &b.run);
	wait_runs();
	ck_assert_int_eq(a.done, 1);
	ck_assert_int_eq(b.done, 1);
	ck_assert_msg(!a.run.failed, "%s", a.run.error);
	ck_assert_msg(!b.run.failed, "%s", b.run.error);
	ck_assert_int_eq(a.run.rows_changed, 1);
	ck_assert_int_eq(a.started, 1);
	ck_assert_str_eq(db_text("SELECT dt || '|' || v || '|' || pstart || '|'"
	    " || pend FROM fct WHERE dt = '2026-02-08'", buf, sizeof buf),
	    "2026-02-08|7|2026-02-08|2026-02-09");
	ck_assert_str_eq(db_text("SELECT dt || '|' || pstart || '|' || pend "
	    "FROM fct WHERE dt LIKE '%T05'", buf, sizeof buf),
	    "2026-02-08T05|2026-02-08 05:00:00|2026-02-08 06:00:00");
	/* Bound, not spliced: a quote in a value is just data. */
	trun_init(&a, &jd, "x'); DROP TABLE fct; --", "s", "e");
	exec_submit(ex, &a.run);
	wait_runs();
	ck_assert_msg(!a.run.failed, "%s", a.run.error);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 3);
}
END_TEST

/* Partition p of calendar c by its key. */
static void
tpart_key(struct exec_part *p, const struct cal *c, const char *key)
{
	struct err err;
	part_t pt;

	ck_assert_msg(cal_parse_key(c, key, &pt, &err) == 0, "%s", err.msg);
	exec_part_set(p, c, pt);
	ck_assert_str_eq(p->key, key);
}

/* The bounds of a partition: local and UTC, the same instants. */
START_TEST(part_bounds_utc)
{
	struct tz *z;
	struct err err;
	struct exec_part p;

	/* UTC: a day's local bounds keep their date form, its UTC bounds
	 * are the same instants; an hour's are the same text */
	tpart_key(&p, &cal_utc[GRAIN_DAY], "2026-02-08");
	ck_assert_str_eq(p.start, "2026-02-08");
	ck_assert_str_eq(p.end, "2026-02-09");
	ck_assert_str_eq(p.start_utc, "2026-02-08 00:00:00");
	ck_assert_str_eq(p.end_utc, "2026-02-09 00:00:00");
	ck_assert_int_eq(p.t1 - p.t0, 86400);
	tpart_key(&p, &cal_utc[GRAIN_HOUR], "2026-02-08T05");
	ck_assert_str_eq(p.start, "2026-02-08 05:00:00");
	ck_assert_str_eq(p.start_utc, "2026-02-08 05:00:00");
	ck_assert_str_eq(p.end_utc, "2026-02-08 06:00:00");
	tpart_key(&p, &cal_utc[GRAIN_MONTH], "2024-02-01");
	ck_assert_str_eq(p.end, "2024-03-01");
	ck_assert_str_eq(p.end_utc, "2024-03-01 00:00:00");

	/* Berlin: the days of the clock changes (23 and 25 hours), and the
	 * two hours of 02:00 on 2023-10-29 */
	ck_assert_msg(tz_load_calendar("Europe/Berlin", &z, &err) == 0, "%s",
		      err.msg);
	ck_assert_ptr_nonnull(z);
	{
		struct cal day = { GRAIN_DAY, WEEK_MONDAY, z };
		struct cal hour = { GRAIN_HOUR, WEEK_MONDAY, z };
		struct cal quarter = { GRAIN_QUARTER, WEEK_MONDAY, z };

		tpart_key(&p, &day, "2023-03-26");
		ck_assert_str_eq(p.start, "2023-03-26");
		ck_assert_str_eq(p.end, "2023-03-27");
		ck_assert_str_eq(p.start_utc, "2023-03-25 23:00:00");
		ck_assert_str_eq(p.end_utc, "2023-03-26 22:00:00");
		ck_assert_int_eq(p.t1 - p.t0, 23 * 3600);
		tpart_key(&p, &day, "2023-10-29");
		ck_assert_str_eq(p.start_utc, "2023-10-28 22:00:00");
		ck_assert_str_eq(p.end_utc, "2023-10-29 23:00:00");
		ck_assert_int_eq(p.t1 - p.t0, 25 * 3600);
		tpart_key(&p, &hour, "2023-10-29T02+02:00");
		ck_assert_str_eq(p.start, "2023-10-29 02:00:00");
		ck_assert_str_eq(p.end, "2023-10-29 03:00:00");
		ck_assert_str_eq(p.start_utc, "2023-10-29 00:00:00");
		ck_assert_str_eq(p.end_utc, "2023-10-29 01:00:00");
		tpart_key(&p, &hour, "2023-10-29T02+01:00");
		ck_assert_str_eq(p.start, "2023-10-29 02:00:00");
		ck_assert_str_eq(p.start_utc, "2023-10-29 01:00:00");
		ck_assert_str_eq(p.end_utc, "2023-10-29 02:00:00");
		tpart_key(&p, &quarter, "2023-10-01");
		ck_assert_str_eq(p.end, "2024-01-01");
		ck_assert_str_eq(p.start_utc, "2023-09-30 22:00:00");
		ck_assert_str_eq(p.end_utc, "2023-12-31 23:00:00");
	}
	tz_unref(z);
}
END_TEST

/* A query receives the UTC bounds; a batch's span is taken by instant,
 * not by text: Berlin's two 02:00 hours have the same local start. */
START_TEST(sql_binds_utc_bounds)
{
	struct job_def jd = sql_job("fct_daily",
	    "INSERT INTO fct (dt, pstart, pend) "
	    "VALUES (:partition, :partition_start_utc, :partition_end_utc)");
	struct job_def batch = sql_job("fct_hourly",
	    "INSERT INTO fct (dt, pstart, pend) VALUES ('span', "
	    ":partition_start_utc, :partition_end_utc);"
	    "INSERT INTO fct (dt, pstart, pend) SELECT 'local', "
	    ":partition_start, :partition_end;"
	    "INSERT INTO fct (dt, pstart, pend) SELECT partition_key, "
	    "partition_start_utc, partition_end_utc FROM backfill_manifest");
	struct trun t;
	struct tz *z;
	struct err err;
	char buf[512];

	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	ck_assert_str_eq(db_text("SELECT dt || '|' || pstart || '|' || pend "
	    "FROM fct", buf, sizeof buf),
	    "2026-02-08|2026-02-08 00:00:00|2026-02-09 00:00:00");
	db_exec("DELETE FROM fct");

	ck_assert_msg(tz_load_calendar("Europe/Berlin", &z, &err) == 0, "%s",
		      err.msg);
	{
		struct cal hour = { GRAIN_HOUR, WEEK_MONDAY, z };

		batch.batch = true;
		trun_init(&t, &batch, "x", "x", "x");
		tpart_key(&t.parts[0], &hour, "2023-10-29T02+01:00");
		t.run.nparts = 2;
		tpart_key(&t.parts[1], &hour, "2023-10-29T02+02:00");
	}
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	ck_assert_str_eq(db_text("SELECT group_concat(r, ';') FROM (SELECT "
	    "dt || '|' || pstart || '|' || pend AS r FROM fct "
	    "ORDER BY dt = 'local', pstart, pend)", buf, sizeof buf),
	    "2023-10-29T02+02:00|2023-10-29 00:00:00|2023-10-29 01:00:00;"
	    "span|2023-10-29 00:00:00|2023-10-29 02:00:00;"
	    "2023-10-29T02+01:00|2023-10-29 01:00:00|2023-10-29 02:00:00;"
	    "local|2023-10-29 02:00:00|2023-10-29 03:00:00");
	tz_unref(z);
}
END_TEST

START_TEST(sql_multi_statement)
{
	struct job_def jd = sql_job("fct_daily",
	    "DELETE FROM fct WHERE dt = :partition;\n"
	    "INSERT INTO fct (dt, v) SELECT dt, SUM(amount) FROM raw "
	    "WHERE dt = :partition GROUP BY dt;\n"
	    "-- a comment between statements\n"
	    "INSERT INTO fct (dt, v) VALUES (:partition_end, -1);  ;\n");
	struct trun t;

	db_exec("INSERT INTO raw VALUES ('2026-02-08', 5), ('2026-02-08', 6),"
	    "('2026-02-09', 100)");
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	ck_assert_int_eq(t.run.rows_changed, 2);
	/* Again: the DELETE makes it idempotent for the partition. */
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	ck_assert_int_eq(t.run.rows_changed, 3);
	ck_assert_int_eq(db_int("SELECT v FROM fct WHERE dt = '2026-02-08'"),
	    11);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 3);
}
END_TEST

START_TEST(sql_failing_statement_rolls_back)
{
	struct job_def jd = sql_job("fct_daily",
	    "DELETE FROM fct WHERE dt = :partition;\n"
	    "INSERT INTO fct_dailysales (dt) VALUES (:partition);");
	struct trun t;

	db_exec("INSERT INTO fct (dt, v) VALUES ('2026-02-08', 42)");
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_int_eq(t.done, 1);
	ck_assert(t.run.failed);
	ck_assert(!t.run.timed_out);
	ck_assert(!t.run.cancelled);
	ck_assert_str_eq(t.run.error,
	    "statement 2 failed: no such table: fct_dailysales");
	ck_assert_int_eq(db_int("SELECT v FROM fct WHERE dt = '2026-02-08'"),
	    42);
	/* The connection is fine for the next run. */
	jd.sql = "DELETE FROM fct WHERE dt = :partition";
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 0);
}
END_TEST

START_TEST(sql_unknown_parameter_and_commit_refused)
{
	struct job_def jd = sql_job("fct_daily",
	    "INSERT INTO fct (dt) VALUES (:partition);"
	    "INSERT INTO fct (dt) VALUES (:partiton)");
	struct trun t;

	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert(t.run.failed);
	ck_assert_str_eq(t.run.error, "statement 2 failed: parameter :partiton "
	    "has no value (known: :partition, :partition_start, "
	    ":partition_end, :partition_start_utc, :partition_end_utc)");

	jd.sql = "INSERT INTO fct (dt) VALUES (:partition); COMMIT;"
	    "INSERT INTO fct (dt) VALUES ('late')";
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert(t.run.failed);
	ck_assert_str_eq(t.run.error, "statement 2 failed: COMMIT controls "
	    "the run's transaction: backfilld begins and commits each "
	    "partition's transaction itself; remove it (to nest one, use "
	    "SAVEPOINT name ... RELEASE name)");
	/* refused before it ran: the first INSERT is rolled back too */
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 0);
}
END_TEST

START_TEST(check_failure_rolls_back)
{
	struct check_def checks[] = {
		{ .name = "has_rows", .sql = "SELECT count(*) FROM fct "
		    "WHERE dt = :partition" },
		{ .name = "reconciles_with_raw", .sql = "SELECT (SELECT SUM(v) "
		    "FROM fct WHERE dt = :partition) IS (SELECT SUM(amount) "
		    "FROM raw WHERE dt = :partition)" },
	};
	struct job_def jd = sql_job("fct_daily",
	    "DELETE FROM fct WHERE dt = :partition;"
	    "INSERT INTO fct (dt, v) VALUES (:partition, 999)");
	struct trun t;

	jd.checks = checks;
	jd.nchecks = 2;
	db_exec("INSERT INTO fct (dt, v) VALUES ('2026-02-08', 42);"
	    "INSERT INTO raw VALUES ('2026-02-08', 42)");
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert(t.run.failed);
	ck_assert_str_eq(t.run.error,
	    "check reconciles_with_raw failed for 2026-02-08 (returned 0)");
	ck_assert_int_eq(db_int("SELECT v FROM fct WHERE dt = '2026-02-08'"),
	    42);
	ck_assert_uint_eq(t.run.nchecks, 2);
	ck_assert_str_eq(t.run.checks[0].name, "has_rows");
	ck_assert(t.run.checks[0].passed);
	ck_assert_str_eq(t.run.checks[0].detail, "returned 1");
	ck_assert_str_eq(t.run.checks[1].name, "reconciles_with_raw");
	ck_assert(!t.run.checks[1].passed);
	ck_assert_str_eq(t.run.checks[1].detail, "returned 0");
	exec_run_clear_results(&t.run);
	ck_assert_ptr_null(t.run.checks);
}
END_TEST

START_TEST(check_null_and_empty_fail)
{
	struct check_def checks[] = {
		{ .name = "null_one", .sql = "SELECT NULL" },
		{ .name = "no_row", .sql = "SELECT 1 WHERE 0" },
		{ .name = "false_text", .sql = "SELECT 'false'" },
		{ .name = "zero_real", .sql = "SELECT 0.0" },
		{ .name = "passes", .sql = "SELECT 'yes'" },
	};
	struct job_def jd = sql_job("fct_daily",
	    "INSERT INTO fct (dt) VALUES (:partition)");
	struct trun t;

	jd.checks = checks;
	jd.nchecks = 5;
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert(t.run.failed);
	ck_assert_str_eq(t.run.error,
	    "check null_one failed for 2026-02-08 (returned NULL)");
	ck_assert_uint_eq(t.run.nchecks, 5);
	ck_assert_str_eq(t.run.checks[0].detail, "returned NULL");
	ck_assert(!t.run.checks[1].passed);
	ck_assert_str_eq(t.run.checks[1].detail, "returned no row");
	ck_assert(!t.run.checks[2].passed);
	ck_assert(!t.run.checks[3].passed);
	ck_assert(t.run.checks[4].passed);
	ck_assert_str_eq(t.run.checks[4].detail, "returned yes");
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 0);
	exec_run_clear_results(&t.run);

	/* Only an empty result, alone. */
	jd.checks = &checks[1];
	jd.nchecks = 1;
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_str_eq(t.run.error,
	    "check no_row failed for 2026-02-08 (returned no row)");
	exec_run_clear_results(&t.run);
}
END_TEST

START_TEST(checks_recorded_on_success)
{
	struct check_def checks[] = {
		{ .name = "one", .sql = "SELECT 1" },
		{ .name = "count", .sql = "SELECT count(*) FROM fct "
		    "WHERE dt = :partition AND pend = :partition_end" },
		{ .name = "true_text", .sql = "SELECT 'ok'" },
	};
	struct job_def jd = sql_job("fct_daily",
	    "INSERT INTO fct (dt, pend) VALUES (:partition, :partition_end)");
	struct trun t;
	size_t i;

	jd.checks = checks;
	jd.nchecks = 3;
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	ck_assert_uint_eq(t.run.nchecks, 3);
	for (i = 0; i < 3; i++) {
		ck_assert_str_eq(t.run.checks[i].name, checks[i].name);
		ck_assert(t.run.checks[i].passed);
		ck_assert_uint_eq(t.run.checks[i].part, 0);
	}
	ck_assert_str_eq(t.run.checks[1].detail, "returned 1");
	ck_assert_str_eq(t.run.checks[2].detail, "returned ok");
	exec_run_clear_results(&t.run);

	/* A check that writes, or that fails to prepare, fails the run. */
	checks[0].sql = "DELETE FROM fct";
	trun_init(&t, &jd, "2026-02-09", "2026-02-09", "2026-02-10");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_str_eq(t.run.error,
	    "check one failed for 2026-02-09: a check must not write");
	ck_assert_uint_eq(t.run.nchecks, 1);
	exec_run_clear_results(&t.run);
	checks[0].sql = "SELECT nope FROM fct";
	trun_init(&t, &jd, "2026-02-09", "2026-02-09", "2026-02-10");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_str_eq(t.run.error,
	    "check one failed for 2026-02-09: no such column: nope");
	exec_run_clear_results(&t.run);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 1);
}
END_TEST

START_TEST(batch_manifest)
{
	struct check_def checks[] = {
		{ .name = "one_row", .sql = "SELECT count(*) = 1 FROM fct "
		    "WHERE dt = :partition AND pstart = :partition_start" },
	};
	struct job_def jd = sql_job("fct_daily",
	    "DELETE FROM fct WHERE dt IN (SELECT partition_key "
	    "FROM backfill_manifest);"
	    "INSERT INTO fct (dt, v, pstart, pend) "
	    "SELECT partition_key, 1, partition_start, partition_end "
	    "FROM backfill_manifest "
	    "WHERE partition_start >= :partition_start "
	    "AND partition_end <= :partition_end");
	struct job_def plain = sql_job("reader",
	    "INSERT INTO fct (dt) SELECT partition_key FROM backfill_manifest");
	struct exec *one;
	struct trun t;
	struct err err;
	size_t i;

	/* One thread: the runs below share a connection. */
	ck_assert_int_eq(exec_new(&loop, 1, &one, &err), 0);
	jd.batch = true;
	jd.checks = checks;
	jd.nchecks = 1;
	db_exec("INSERT INTO fct (dt, v) VALUES ('2026-02-09', 42)");
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	trun_add(&t, "2026-02-09", "2026-02-09", "2026-02-10");
	trun_add(&t, "2026-02-10", "2026-02-10", "2026-02-11");
	exec_submit(one, &t.run);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(t.done, 1);
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	ck_assert_int_eq(t.run.rows_changed, 4); /* 1 deleted, 3 inserted */
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct WHERE v = 1"), 3);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 3);
	ck_assert_uint_eq(t.run.nchecks, 3);
	for (i = 0; i < 3; i++) {
		ck_assert(t.run.checks[i].passed);
		ck_assert_uint_eq(t.run.checks[i].part, i);
	}
	exec_run_clear_results(&t.run);

	/* The manifest does not outlive its run on the connection. */
	trun_init(&t, &plain, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(one, &t.run);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_str_eq(t.run.error,
	    "statement 1 failed: no such table: backfill_manifest");

	/* One partition's check fails: the whole batch rolls back. */
	checks[0].sql = "SELECT :partition <> '2026-02-12'";
	jd.sql = "DELETE FROM fct; INSERT INTO fct (dt) "
	    "SELECT partition_key FROM backfill_manifest";
	trun_init(&t, &jd, "2026-02-11", "2026-02-11", "2026-02-12");
	trun_add(&t, "2026-02-12", "2026-02-12", "2026-02-13");
	trun_add(&t, "2026-02-13", "2026-02-13", "2026-02-14");
	exec_submit(one, &t.run);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert(t.run.failed);
	ck_assert_str_eq(t.run.error,
	    "check one_row failed for 2026-02-12 (returned 0)");
	ck_assert_uint_eq(t.run.nchecks, 3);
	ck_assert(t.run.checks[0].passed);
	ck_assert(!t.run.checks[1].passed);
	ck_assert(t.run.checks[2].passed);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct WHERE v = 1"), 3);
	exec_run_clear_results(&t.run);

	/* :partition means nothing in a batch's own SQL. */
	jd.sql = "DELETE FROM fct WHERE dt = :partition";
	trun_init(&t, &jd, "2026-02-11", "2026-02-11", "2026-02-12");
	exec_submit(one, &t.run);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_str_eq(t.run.error, "statement 1 failed: parameter "
	    ":partition has no value (known: :partition_start, "
	    ":partition_end, :partition_start_utc, :partition_end_utc)");
	ck_assert_ptr_null(t.run.checks);
	exec_run_clear_results(&t.run);
	close_exec(one);
}
END_TEST

START_TEST(connection_reused_across_runs)
{
	struct job_def jd = sql_job("fct_daily",
	    "CREATE TEMP TABLE IF NOT EXISTS seen (x);"
	    "INSERT INTO seen VALUES (1);"
	    "INSERT INTO fct (dt, v) SELECT :partition, count(*) FROM seen");
	struct exec *one;
	struct trun t;
	struct err err;

	/* TEMP tables live as long as the connection: the second run on the
	 * only worker sees the first run's row. */
	ck_assert_int_eq(exec_new(&loop, 1, &one, &err), 0);
	trun_init(&t, &jd, "a", "a", "b");
	exec_submit(one, &t.run);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	trun_init(&t, &jd, "b", "b", "c");
	exec_submit(one, &t.run);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	ck_assert_int_eq(db_int("SELECT v FROM fct WHERE dt = 'b'"), 2);
	close_exec(one);
}
END_TEST

START_TEST(sql_timeout_interrupts)
{
	struct job_def jd = sql_job("slow", SLOW_SQL);
	struct trun t;
	uint64_t t0;

	jd.timeout = 1;
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	t0 = uv_hrtime();
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_int_eq(t.done, 1);
	ck_assert(t.run.failed);
	ck_assert(t.run.timed_out);
	ck_assert(!t.run.cancelled);
	ck_assert_str_eq(t.run.error, "timed out after 1s");
	/* Interrupted, not run to the end (that takes minutes). */
	ck_assert_uint_lt(uv_hrtime() - t0, 20ULL * 1000000000ULL);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 0);

	/* The interrupted connection serves the next run. */
	jd.sql = "INSERT INTO fct (dt) VALUES (:partition)";
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
}
END_TEST

START_TEST(sql_cancel_running_and_queued)
{
	struct job_def jd = sql_job("slow", SLOW_SQL);
	struct exec *one;
	struct trun a, b;
	struct err err;

	/* Running: cancelled from started_cb, on the worker already. */
	trun_init(&a, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	a.cancel_on_start = ex;
	exec_submit(ex, &a.run);
	wait_runs();
	ck_assert_int_eq(a.done, 1);
	ck_assert_int_eq(a.started, 1);
	ck_assert(a.run.failed);
	ck_assert(a.run.cancelled);
	ck_assert(!a.run.timed_out);
	ck_assert_str_eq(a.run.error, "cancelled");

	/* Queued behind a slow run on a single worker: never starts. */
	ck_assert_int_eq(exec_new(&loop, 1, &one, &err), 0);
	trun_init(&a, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	trun_init(&b, &jd, "2026-02-09", "2026-02-09", "2026-02-10");
	exec_submit(one, &a.run);
	exec_submit(one, &b.run);
	ck_assert_int_eq(a.done + b.done, 0);
	exec_cancel(one, &b.run);
	a.cancel_on_start = one;
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(b.done, 1);
	ck_assert_int_eq(b.started, 0);
	ck_assert(b.run.cancelled);
	ck_assert_str_eq(b.run.error, "cancelled");
	ck_assert_int_eq(a.done, 1);
	ck_assert(a.run.cancelled);
	close_exec(one);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 0);
}
END_TEST

/* ---- runs handed ahead (exec_submit_after) ------------------------------ */

/* A run handed ahead waits for the run it follows, then starts on its
 * worker (its TEMP table is the connection's: the count says which
 * connection, and in which order), although three workers are idle; a
 * third one follows the last of the chain. */
START_TEST(sql_handed_ahead_same_worker_after)
{
	struct job_def jd = sql_job("ahead",
	    "CREATE TEMP TABLE IF NOT EXISTS seen (x);"
	    "INSERT INTO seen VALUES (1);"
	    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
	    "WHERE x < 300000) "
	    "INSERT INTO fct (dt, v) SELECT :partition,"
	    " (SELECT count(*) FROM seen) + 0 * count(*) FROM c");
	struct trun a, b, c;

	trun_init(&a, &jd, "a", "a", "b");
	trun_init(&b, &jd, "b", "b", "c");
	trun_init(&c, &jd, "c", "c", "d");
	exec_submit(ex, &a.run);
	exec_submit_after(ex, &b.run, &a.run);
	exec_submit_after(ex, &c.run, &a.run);
	ck_assert_int_eq(a.done + b.done + c.done, 0);
	wait_runs();
	ck_assert_msg(!a.run.failed, "%s", a.run.error);
	ck_assert_msg(!b.run.failed, "%s", b.run.error);
	ck_assert_msg(!c.run.failed, "%s", c.run.error);
	ck_assert_int_eq(b.started, 1);
	ck_assert_int_eq(db_int("SELECT v FROM fct WHERE dt = 'a'"), 1);
	ck_assert_int_eq(db_int("SELECT v FROM fct WHERE dt = 'b'"), 2);
	ck_assert_int_eq(db_int("SELECT v FROM fct WHERE dt = 'c'"), 3);
}
END_TEST

/* Taken back or cancelled before it starts, a run handed ahead never
 * runs (the one after it follows the run before it instead); one after
 * a run that is cancelled while it runs starts when that one ends. */
START_TEST(sql_handed_ahead_withdrawn_and_cancelled)
{
	struct job_def slow = sql_job("slow", SLOW_SQL);
	struct job_def fast = sql_job("fast",
	    "INSERT INTO fct (dt, v) VALUES (:partition, 1)");
	struct trun a, b, c, d;

	trun_init(&a, &slow, "a", "a", "b");
	trun_init(&b, &fast, "b", "b", "c");
	trun_init(&c, &fast, "c", "c", "d");
	trun_init(&d, &fast, "d", "d", "e");
	exec_submit(ex, &a.run);
	exec_submit_after(ex, &b.run, &a.run);
	exec_submit_after(ex, &c.run, &a.run); /* a, b, c */
	ck_assert(exec_withdraw(ex, &b.run));  /* a, c */
	exec_cancel(ex, &c.run);               /* a */
	exec_submit_after(ex, &d.run, &a.run); /* a, d */
	a.cancel_on_start = ex;
	wait_runs();
	ck_assert_int_eq(b.done, 1);
	ck_assert_int_eq(b.started, 0);
	ck_assert(b.run.failed && b.run.not_started && b.run.withdrawn);
	ck_assert(!b.run.cancelled);
	ck_assert_str_eq(b.run.error, "taken back before it started");
	ck_assert(!exec_withdraw(ex, &b.run));
	ck_assert_int_eq(c.done, 1);
	ck_assert_int_eq(c.started, 0);
	ck_assert(c.run.cancelled && !c.run.withdrawn);
	ck_assert(a.run.cancelled);
	ck_assert_int_eq(d.done, 1);
	ck_assert_int_eq(d.started, 1);
	ck_assert_msg(!d.run.failed, "%s", d.run.error);
	ck_assert(!exec_withdraw(ex, &d.run));
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 1);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct WHERE dt = 'd'"), 1);
}
END_TEST

/* The run before it cancelled while queued: the run handed ahead takes
 * its place in the queue and runs. */
START_TEST(sql_handed_ahead_after_queued_cancel)
{
	struct job_def slow = sql_job("slow", SLOW_SQL);
	struct job_def fast = sql_job("fast",
	    "INSERT INTO fct (dt, v) VALUES (:partition, 1)");
	struct exec *one;
	struct trun x, a, b;
	struct err err;

	ck_assert_int_eq(exec_new(&loop, 1, &one, &err), 0);
	trun_init(&x, &slow, "x", "x", "y");
	trun_init(&a, &fast, "a", "a", "b");
	trun_init(&b, &fast, "b", "b", "c");
	exec_submit(one, &x.run);
	exec_submit(one, &a.run);
	exec_submit_after(one, &b.run, &a.run);
	exec_cancel(one, &a.run);
	x.cancel_on_start = one;
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert(x.run.cancelled);
	ck_assert(a.run.cancelled);
	ck_assert_int_eq(a.started, 0);
	ck_assert_int_eq(b.started, 1);
	ck_assert_msg(!b.run.failed, "%s", b.run.error);
	close_exec(one);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 1);
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct WHERE dt = 'b'"), 1);
}
END_TEST

/* backfilld_commits (wh_commits.h, rule 3): the first run of a request
 * on a connection deletes its job's rows of older requests past the
 * job's keep_runs; the request's later runs delete nothing. */
START_TEST(sql_commits_pruned_once_per_request)
{
	struct job_def jd = sql_job("ones",
	    "INSERT INTO fct (dt, v) VALUES (:partition, 1)");
	struct wh_commit c = { 2, 0, 21, 0 };
	struct exec *one;
	struct trun t;
	struct err err;

	ck_assert_int_eq(exec_new(&loop, 1, &one, &err), 0);
	for (int i = 0; i < 3; i++) {
		char key[16];

		if (i == 1) /* an old request's row, long past keep_runs */
			db_exec("INSERT INTO backfilld_commits VALUES (1,"
			    " 'ones', 'old', 1, 1)");
		if (i == 2)
			c.request = 3;
		snprintf(key, sizeof key, "k%d", i);
		trun_init(&t, &jd, key, key, key);
		c.run_id = 21 + i;
		t.run.commits = &c;
		t.run.ncommits = 1;
		t.run.commits_keep_ms = 3600 * 1000;
		exec_submit(one, &t.run);
		uv_run(&loop, UV_RUN_DEFAULT);
		ck_assert_msg(!t.run.failed, "%s", t.run.error);
		if (i == 1) /* request 2's second run: kept */
			ck_assert_int_eq(db_int("SELECT count(*) FROM"
			    " backfilld_commits WHERE request_id = 1"), 1);
	}
	/* request 3's first run deleted it; request 2's rows are recent */
	ck_assert_int_eq(db_int("SELECT count(*) FROM backfilld_commits"
	    " WHERE request_id = 1"), 0);
	ck_assert_int_eq(db_int("SELECT count(*) FROM backfilld_commits"
	    " WHERE request_id = 2"), 2);
	ck_assert_int_eq(db_int("SELECT count(*) FROM backfilld_commits"
	    " WHERE request_id = 3"), 1);
	close_exec(one);
}
END_TEST

START_TEST(sql_missing_warehouse)
{
	struct job_def jd = sql_job("fct_daily", "SELECT 1");
	struct trun t;
	char want[PATH_MAX + 128];

	snprintf(dbpath, sizeof dbpath, "%s/missing.db", tmpdir);
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert(t.run.failed);
	snprintf(want, sizeof want, "warehouse \"wh\": cannot open %s: "
	    "No such file or directory", dbpath);
	ck_assert_str_eq(t.run.error, want);
	ck_assert_int_ne(access(dbpath, F_OK), 0); /* not created */
}
END_TEST

START_TEST(sql_many_concurrent)
{
	struct job_def jd = sql_job("fct_daily",
	    "DELETE FROM fct WHERE dt = :partition;"
	    "INSERT INTO fct (dt, v) VALUES (:partition, 1)");
	struct check_def checks[] = {
		{ .name = "landed", .sql = "SELECT count(*) FROM fct "
		    "WHERE dt = :partition" },
	};
	static struct trun t[50];
	char key[CAL_KEY_MAX];
	int i;

	jd.checks = checks;
	jd.nchecks = 1;
	for (i = 0; i < 50; i++) {
		snprintf(key, sizeof key, "k%02d", i);
		trun_init(&t[i], &jd, key, key, key);
		exec_submit(ex, &t[i].run);
	}
	for (i = 0; i < 50; i++)
		ck_assert_int_eq(t[i].done, 0);
	wait_runs();
	for (i = 0; i < 50; i++) {
		ck_assert_int_eq(t[i].done, 1);
		ck_assert_int_eq(t[i].started, 1);
		ck_assert_msg(!t[i].run.failed, "%d: %s", i, t[i].run.error);
		ck_assert_int_eq(t[i].run.rows_changed, 1);
		exec_run_clear_results(&t[i].run);
	}
	ck_assert_int_eq(db_int("SELECT count(*) FROM fct"), 50);
}
END_TEST

START_TEST(close_cancels_in_flight)
{
	struct job_def jd = sql_job("slow", SLOW_SQL);
	char *argv[] = { "/bin/sh", "-c", "exec sleep 100", NULL };
	struct job_def cj = cmd_job("sleeper", argv);
	struct trun a, b, c;

	trun_init(&a, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	trun_init(&b, &cj, "2026-02-08", "2026-02-08", "2026-02-09");
	trun_init(&c, &jd, "2026-02-09", "2026-02-09", "2026-02-10");
	/* c closes the executor once it runs on a worker. */
	c.close_on_start = ex;
	exec_submit(ex, &a.run);
	exec_submit(ex, &b.run);
	exec_submit(ex, &c.run);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert(ex_closed);
	ck_assert_int_eq(a.done, 1);
	ck_assert_int_eq(b.done, 1);
	ck_assert_int_eq(c.done, 1);
	ck_assert(a.run.cancelled && b.run.cancelled && c.run.cancelled);
	ck_assert_str_eq(b.run.error, "cancelled");
	ck_assert_int_eq(b.run.rows_changed, -1);
}
END_TEST

START_TEST(close_idle_and_submit_after_close)
{
	struct job_def jd = sql_job("fct_daily", "SELECT 1");
	struct trun t;

	exec_close(ex, test_closed_cb, &ex_closed);
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert(ex_closed);
	ck_assert_int_eq(t.done, 1);
	ck_assert(t.run.cancelled);
}
END_TEST

/* ---- command runs ------------------------------------------------------ */

START_TEST(cmd_success_argv_env_log)
{
	char script[PATH_MAX * 2], out[PATH_MAX], log[PATH_MAX], buf[512];
	char *argv[] = { "/bin/sh", "-c", script, "sh",
		"{partition}:{partition_start}..{partition_end}{x}",
		"{partition_start_utc}|{partition_end_utc}", NULL };
	struct job_def jd = cmd_job("export", argv);
	struct trun t;
	struct stat st;

	setenv("BACKFILLD_JOB", "stale-value", 1);
	setenv("BACKFILLD_PARTITION_END_UTC", "stale-value", 1);
	setenv("BACKFILLD_TEST_INHERITED", "kept", 1);
	snprintf(out, sizeof out, "%s/out.{partition}", tmpdir);
	snprintf(script, sizeof script,
	    "echo \"$BACKFILLD_JOB $BACKFILLD_PARTITION "
	    "$BACKFILLD_PARTITION_START $BACKFILLD_PARTITION_END "
	    "$BACKFILLD_ATTEMPT $BACKFILLD_TEST_INHERITED {partition} $1 "
	    "$BACKFILLD_PARTITION_START_UTC $BACKFILLD_PARTITION_END_UTC $2\" "
	    "> %s; echo to-stderr >&2; echo to-stdout", out);
	trun_init(&t, &jd, "2026-02-08T05", "2026-02-08 05:00:00",
	    "2026-02-08 06:00:00");
	t.run.attempt = 2;
	t.run.run_id = 7;
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_int_eq(t.done, 1);
	ck_assert_int_eq(t.started, 1);
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	ck_assert_int_eq(t.run.rows_changed, -1);
	snprintf(out, sizeof out, "%s/out.2026-02-08T05", tmpdir);
	ck_assert_str_eq(read_file(out, buf, sizeof buf),
	    "export 2026-02-08T05 2026-02-08 05:00:00 2026-02-08 06:00:00 2 "
	    "kept 2026-02-08T05 2026-02-08T05:2026-02-08 05:00:00.."
	    "2026-02-08 06:00:00{x} 2026-02-08 05:00:00 2026-02-08 06:00:00 "
	    "2026-02-08 05:00:00|2026-02-08 06:00:00\n");
	/* the log is the run's: named by its run id (exec_log_path) */
	snprintf(log, sizeof log, "%s/export/2026-02-08T05.run-7.log", logdir);
	ck_assert_str_eq(read_file(log, buf, sizeof buf),
	    "to-stderr\nto-stdout\n");
	snprintf(log, sizeof log, "%s/export", logdir);
	ck_assert_int_eq(stat(log, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0750);

	/* Another run of the same partition and attempt number (another
	 * request's) writes its own file, the first one's stays as it was;
	 * no log_dir: /dev/null. */
	t.run.run_id = 8;
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
	snprintf(log, sizeof log, "%s/export/2026-02-08T05.run-8.log", logdir);
	ck_assert_str_eq(read_file(log, buf, sizeof buf),
	    "to-stderr\nto-stdout\n");
	snprintf(log, sizeof log, "%s/export/2026-02-08T05.run-7.log", logdir);
	ck_assert_str_eq(read_file(log, buf, sizeof buf),
	    "to-stderr\nto-stdout\n");
	t.run.log_dir = NULL;
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_msg(!t.run.failed, "%s", t.run.error);
}
END_TEST

START_TEST(cmd_exit_status_and_signal)
{
	char *exit3[] = { "/bin/sh", "-c", "echo failing; exit 3", NULL };
	char *killed[] = { "/bin/sh", "-c", "kill -9 $$", NULL };
	struct job_def a = cmd_job("export", exit3);
	struct job_def b = cmd_job("export", killed);
	struct trun ta, tb;
	char want[PATH_MAX + 128], buf[64];

	trun_init(&ta, &a, "2026-02-08", "2026-02-08", "2026-02-09");
	trun_init(&tb, &b, "2026-02-09", "2026-02-09", "2026-02-10");
	ta.run.run_id = 11;
	tb.run.run_id = 12;
	exec_submit(ex, &ta.run);
	exec_submit(ex, &tb.run);
	wait_runs();
	ck_assert(ta.run.failed && !ta.run.timed_out);
	snprintf(want, sizeof want, "command exited with status 3 "
	    "(log: %s/export/2026-02-08.run-11.log)", logdir);
	ck_assert_str_eq(ta.run.error, want);
	snprintf(want, sizeof want, "%s/export/2026-02-08.run-11.log", logdir);
	ck_assert_str_eq(read_file(want, buf, sizeof buf), "failing\n");
	ck_assert(tb.run.failed);
	snprintf(want, sizeof want, "command killed by signal 9 "
	    "(log: %s/export/2026-02-09.run-12.log)", logdir);
	ck_assert_str_eq(tb.run.error, want);
}
END_TEST

START_TEST(cmd_timeout_kills_process_group)
{
	char script[PATH_MAX + 64], pidfile[PATH_MAX], buf[32];
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct job_def jd = cmd_job("export", argv);
	struct trun t;
	pid_t child;
	int st;

	/* Orphans of the killed shell come to us, to be waited for. */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	snprintf(pidfile, sizeof pidfile, "%s/child.pid", tmpdir);
	snprintf(script, sizeof script,
	    "sleep 100 & echo $! > %s; wait", pidfile);
	jd.timeout = 1;
	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert(t.run.failed);
	ck_assert(t.run.timed_out);
	ck_assert_str_eq(t.run.error, "timed out after 1s");
	child = (pid_t)atoi(read_file(pidfile, buf, sizeof buf));
	ck_assert_int_gt(child, 1);
	/* The background child got the same SIGKILL: it is gone. */
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert(WIFSIGNALED(st));
	ck_assert_int_eq(WTERMSIG(st), SIGKILL);
	ck_assert_int_eq(kill(child, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
}
END_TEST

START_TEST(cmd_missing_executable)
{
	char *argv[] = { "/nonexistent/bin/export", "--date", "{partition}",
		NULL };
	struct job_def jd = cmd_job("export", argv);
	struct trun t;

	trun_init(&t, &jd, "2026-02-08", "2026-02-08", "2026-02-09");
	exec_submit(ex, &t.run);
	wait_runs();
	ck_assert_int_eq(t.done, 1);
	ck_assert_int_eq(t.started, 0);
	ck_assert(t.run.failed);
	ck_assert_str_eq(t.run.error, "cannot run /nonexistent/bin/export: "
	    "No such file or directory");
}
END_TEST

/* The suite. */
static Suite *
exec_suite(void)
{
	Suite *s = suite_create("exec");
	TCase *sql = tcase_create("sql");
	TCase *cmd = tcase_create("command");
	TCase *life = tcase_create("lifecycle");

	tcase_add_checked_fixture(sql, setup, teardown);
	tcase_add_test(sql, sql_binds_parameters);
	tcase_add_test(sql, part_bounds_utc);
	tcase_add_test(sql, sql_binds_utc_bounds);
	tcase_add_test(sql, sql_multi_statement);
	tcase_add_test(sql, sql_failing_statement_rolls_back);
	tcase_add_test(sql, sql_unknown_parameter_and_commit_refused);
	tcase_add_test(sql, check_failure_rolls_back);
	tcase_add_test(sql, check_null_and_empty_fail);
	tcase_add_test(sql, checks_recorded_on_success);
	tcase_add_test(sql, batch_manifest);
	tcase_add_test(sql, connection_reused_across_runs);
	tcase_add_test(sql, sql_timeout_interrupts);
	tcase_add_test(sql, sql_cancel_running_and_queued);
	tcase_add_test(sql, sql_handed_ahead_same_worker_after);
	tcase_add_test(sql, sql_handed_ahead_withdrawn_and_cancelled);
	tcase_add_test(sql, sql_handed_ahead_after_queued_cancel);
	tcase_add_test(sql, sql_commits_pruned_once_per_request);
	tcase_add_test(sql, sql_missing_warehouse);
	tcase_add_test(sql, sql_many_concurrent);
	suite_add_tcase(s, sql);

	tcase_add_checked_fixture(cmd, setup, teardown);
	tcase_add_test(cmd, cmd_success_argv_env_log);
	tcase_add_test(cmd, cmd_exit_status_and_signal);
	tcase_add_test(cmd, cmd_timeout_kills_process_group);
	tcase_add_test(cmd, cmd_missing_executable);
	suite_add_tcase(s, cmd);

	tcase_add_checked_fixture(life, setup, teardown);
	tcase_add_test(life, close_cancels_in_flight);
	tcase_add_test(life, close_idle_and_submit_after_close);
	suite_add_tcase(s, life);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	signal(SIGPIPE, SIG_IGN);
	sr = srunner_create(exec_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
