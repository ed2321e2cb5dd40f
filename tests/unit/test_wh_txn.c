/*
 * test_wh_txn.c - the drivers' guard on the run's transaction (wh.h;
 * daemon/wh/wh_sqlite.c, daemon/wh/wh_pg.c): job SQL or a check that
 * would end or reshape the transaction, handed to the driver directly
 * (past config.c's static check), fails and leaves the warehouse as it
 * was; the connection serves the next run; a SAVEPOINT nested inside the
 * run's transaction works.  The "postgres" case runs when
 * BACKFILLD_TEST_STATE_PG names a server (tests/integration/
 * test_txn_control.py starts one); it also runs what hides from the static
 * check (a procedure or function that commits, EXECUTE 'COMMIT').
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "wh.h"
#ifdef HAVE_LIBPQ
#include "module.h"
#include "store_pg_fixture.h"
#endif

#define GUARD "controls the run's transaction: backfilld begins and " \
	"commits each partition's transaction itself; remove it (to nest " \
	"one, use SAVEPOINT name ... RELEASE name)"
#define INSERT "INSERT INTO t VALUES (:partition, 'c');\n"

/* A statement, and the error it must fail with (a part of it); NULL:
 * any error (the server refuses it on its own). */
struct txn_stmt {
	const char *sql;
	const char *msg;
};

static const struct txn_stmt lite_stmts[] = {
	{ "COMMIT", "COMMIT " GUARD },
	{ "COMMIT TRANSACTION", "COMMIT " GUARD },
	{ "END", "COMMIT " GUARD },
	{ "ROLLBACK", "ROLLBACK " GUARD },
	{ "BEGIN", "BEGIN " GUARD },
	{ "BEGIN IMMEDIATE TRANSACTION", "BEGIN " GUARD },
	{ "ATTACH ':memory:' AS other", "ATTACH " GUARD },
	{ "DETACH other", "DETACH " GUARD },
	{ "VACUUM", NULL }, /* cannot run in a transaction, or write in a check */
	{ "PRAGMA journal_mode = WAL", "PRAGMA journal_mode " GUARD },
	{ "PRAGMA main.locking_mode = EXCLUSIVE", "PRAGMA locking_mode " GUARD },
	{ "PRAGMA synchronous = OFF", "PRAGMA synchronous " GUARD },
	{ "PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA wal_checkpoint " GUARD },
	{ "PRAGMA wal_autocheckpoint = 0", "PRAGMA wal_autocheckpoint " GUARD },
	{ "PRAGMA busy_timeout = 1", "PRAGMA busy_timeout " GUARD },
	{ "PRAGMA query_only = 1", "PRAGMA query_only " GUARD },
	{ "PRAGMA read_uncommitted = 1", "PRAGMA read_uncommitted " GUARD },
	{ "PRAGMA writable_schema = 1", "PRAGMA writable_schema " GUARD },
	{ "PRAGMA schema_version = 99", "PRAGMA schema_version " GUARD },
	{ "PRAGMA auto_vacuum = FULL", "PRAGMA auto_vacuum " GUARD },
	{ "PRAGMA page_size = 8192", "PRAGMA page_size " GUARD },
	{ "PRAGMA temp_store = MEMORY", "PRAGMA temp_store " GUARD },
	{ "PRAGMA temp_store_directory = '/tmp'",
	  "PRAGMA temp_store_directory " GUARD },
	/* PostgreSQL's: syntax errors here */
	{ "ABORT", NULL },
	{ "START TRANSACTION", NULL },
	{ "COMMIT AND CHAIN", NULL },
	{ "PREPARE TRANSACTION 'bfd'", NULL },
	{ "COMMIT PREPARED 'bfd'", NULL },
	{ "ROLLBACK PREPARED 'bfd'", NULL },
};

#define NLITE (int)(sizeof lite_stmts / sizeof lite_stmts[0])

#ifdef HAVE_LIBPQ
static const struct txn_stmt pg_stmts[] = {
	{ "COMMIT", "COMMIT " GUARD },
	{ "COMMIT WORK", "COMMIT " GUARD },
	{ "END", "END " GUARD },
	{ "ROLLBACK", "ROLLBACK " GUARD },
	{ "ABORT", "ABORT " GUARD },
	{ "BEGIN", "BEGIN " GUARD },
	{ "START TRANSACTION", "START TRANSACTION " GUARD },
	{ "COMMIT AND CHAIN", "COMMIT AND CHAIN " GUARD },
	{ "ROLLBACK AND CHAIN", "ROLLBACK AND CHAIN " GUARD },
	{ "PREPARE TRANSACTION 'bfd'", "PREPARE TRANSACTION " GUARD },
	{ "COMMIT PREPARED 'bfd'", "COMMIT PREPARED " GUARD },
	{ "ROLLBACK PREPARED 'bfd'", "ROLLBACK PREPARED " GUARD },
	{ "SET TRANSACTION READ ONLY", "SET TRANSACTION " GUARD },
	{ "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
	  "SET SESSION CHARACTERISTICS " GUARD },
	{ "DO $$BEGIN INSERT INTO t VALUES ('do', 'c'); COMMIT; END$$",
	  "COMMIT in a DO block " GUARD },
	/* past the static check: PostgreSQL refuses them in a block */
	{ "CALL bfd_commits()", "invalid transaction termination" },
	{ "SELECT bfd_commits_fn()", "invalid transaction termination" },
	{ "DO $$BEGIN EXECUTE 'COM' || 'MIT'; END$$", NULL },
	/* SQLite's */
	{ "VACUUM", "cannot run inside a transaction block" },
	{ "ATTACH 'x' AS x", NULL },
	{ "PRAGMA journal_mode = WAL", NULL },
};

#define NPG (int)(sizeof pg_stmts / sizeof pg_stmts[0])
#endif

/* The driver under test and how to look at its warehouse from outside. */
struct side {
	const struct wh_driver *drv;
	struct warehouse_def wh;
	long long (*peek)(const char *sql);
	const struct txn_stmt *stmts;
};

static struct side side;
static struct wh_conn *conn;
static char tmpdir[64], dbpath[128];
static const struct wh_param params[] = { { "partition", "2026-02-08" } };

/* The first column of the first row of sql in the SQLite warehouse, on a
 * connection of the test's own. */
static long long
lite_peek(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;

	ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE,
					 NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* A fresh SQLite warehouse holding t, and a connection to it. */
static void
lite_setup(void)
{
	struct err err;
	sqlite3 *db;

	snprintf(tmpdir, sizeof tmpdir, "/tmp/bfd-whtxn-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(dbpath, sizeof dbpath, "%s/wh.db", tmpdir);
	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE t (dt TEXT, v TEXT)",
				      NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	memset(&side, 0, sizeof side);
	side.drv = &wh_sqlite_driver;
	side.wh.name = "wh";
	side.wh.kind = WH_SQLITE;
	side.wh.path = dbpath;
	side.peek = lite_peek;
	side.stmts = lite_stmts;
	ck_assert_msg(side.drv->open(&side.wh, &conn, &err) == 0, "%s",
		      err.msg);
}

static void
lite_teardown(void)
{
	char path[160];

	side.drv->close(conn);
	unlink(dbpath);
	snprintf(path, sizeof path, "%s-journal", dbpath);
	unlink(path);
	rmdir(tmpdir);
}

#ifdef HAVE_LIBPQ
/* A fresh schema holding t, a procedure and a function that commit (the
 * schema is dropped by the next case's reset), and
 * a connection of the PostgreSQL driver to it. */
static void
pg_setup(void)
{
	char why[512];
	struct err err;

	pgfix_reset();
	pgfix_peek("CREATE TABLE t (dt text, v text);"
		   "CREATE PROCEDURE bfd_commits() LANGUAGE plpgsql AS"
		   " $$BEGIN COMMIT; INSERT INTO t VALUES ('proc', 'c'); END$$;"
		   "CREATE FUNCTION bfd_commits_fn() RETURNS int LANGUAGE plpgsql"
		   " AS $$BEGIN COMMIT; RETURN 1; END$$");
	memset(&side, 0, sizeof side);
	side.drv = module_symbol("wh_pg_driver", "the PostgreSQL driver", why,
				 sizeof why);
	ck_assert_msg(side.drv != NULL, "%s", why);
	side.wh.name = "dw";
	side.wh.kind = WH_POSTGRES;
	side.wh.conninfo = (char *)pgfix_conninfo();
	side.wh.password_file = (char *)pgfix_password_file();
	side.peek = pgfix_peek;
	side.stmts = pg_stmts;
	ck_assert_msg(side.drv->open(&side.wh, &conn, &err) == 0, "%s",
		      err.msg);
}

static void
pg_teardown(void)
{
	side.drv->close(conn);
}
#endif

/* The run's transaction is open: begin and the row of statement 1. */
static void
run_begin(void)
{
	struct err err;

	ck_assert_msg(side.drv->begin(conn, &err) == 0, "%s", err.msg);
	ck_assert_msg(side.drv->exec_script(conn, INSERT, params, 1,
					    &err) == 0, "%s", err.msg);
}

/* The run failed with want (NULL: any error); it is rolled back, the
 * warehouse holds no row, and the connection serves a run that commits. */
static void
run_refused(int rc, const struct err *err, const char *sql,
	    const char *want)
{
	struct err e2;

	ck_assert_msg(rc == -1, "%s: the driver ran it", sql);
	if (want != NULL)
		ck_assert_msg(strstr(err->msg, want) != NULL,
			      "%s: %s; want \"%s\"", sql, err->msg, want);
	side.drv->rollback(conn);
	ck_assert_msg(side.peek("SELECT count(*) FROM t") == 0,
		      "%s: the warehouse changed", sql);
	ck_assert(side.drv->usable(conn));
	run_begin();
	ck_assert_msg(side.drv->commit(conn, &e2) == 0, "%s", e2.msg);
	ck_assert_int_eq(side.peek("SELECT count(*) FROM t"), 1);
}

/* Each statement as the second statement of job SQL. */
START_TEST(test_job_stmt)
{
	const struct txn_stmt *s = &side.stmts[_i];
	char sql[512];
	struct err err;
	int rc;

	snprintf(sql, sizeof sql, "%s;\nINSERT INTO t VALUES ('late', 'c')",
		 s->sql);
	run_begin();
	rc = side.drv->exec_script(conn, sql, params, 1, &err);
	run_refused(rc, &err, s->sql, s->msg);
	if (s->msg != NULL && strstr(s->msg, GUARD) != NULL)
		ck_assert_msg(strncmp(err.msg, "statement 1 failed: ", 20) == 0,
			      "%s", err.msg);
}
END_TEST

/* Each statement as a check, after the job's statement. */
START_TEST(test_check_stmt)
{
	const struct txn_stmt *s = &side.stmts[_i];
	struct err err;
	bool has_row;
	char *value = NULL;
	int rc;

	run_begin();
	rc = side.drv->query_value(conn, s->sql, params, 1, &has_row, &value,
				   &err);
	free(value);
	run_refused(rc, &err, s->sql, s->msg);
}
END_TEST

/* A savepoint nested inside the run's transaction works, rolled back to
 * and released, in job SQL; the run then commits. */
START_TEST(test_savepoint)
{
	struct err err;
	bool has_row;
	char *value = NULL;

	ck_assert_msg(side.drv->begin(conn, &err) == 0, "%s", err.msg);
	ck_assert_msg(side.drv->exec_script(conn,
	    "SAVEPOINT s;\n"
	    "INSERT INTO t VALUES (:partition, 'dropped');\n"
	    "ROLLBACK TO SAVEPOINT s;\n"
	    "INSERT INTO t VALUES (:partition, 'kept');\n"
	    "RELEASE SAVEPOINT s;", params, 1, &err) == 0, "%s", err.msg);
	ck_assert_msg(side.drv->query_value(conn, "SELECT count(*) FROM t",
	    NULL, 0, &has_row, &value, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(value, "1");
	free(value);
	ck_assert_msg(side.drv->commit(conn, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(side.peek("SELECT count(*) FROM t WHERE v = 'kept'"),
			 1);
	ck_assert_int_eq(side.peek("SELECT count(*) FROM t"), 1);
}
END_TEST

/* Suite: the SQLite driver; the PostgreSQL one when a server is named. */
static Suite *
wh_txn_suite(void)
{
	Suite *s = suite_create("wh_txn");
	TCase *tc = tcase_create("sqlite");

	tcase_add_checked_fixture(tc, lite_setup, lite_teardown);
	tcase_add_loop_test(tc, test_job_stmt, 0, NLITE);
	tcase_add_loop_test(tc, test_check_stmt, 0, NLITE);
	tcase_add_test(tc, test_savepoint);
	suite_add_tcase(s, tc);
#ifdef HAVE_LIBPQ
	if (pgfix_available()) {
		tc = tcase_create("postgres");
		tcase_add_checked_fixture(tc, pg_setup, pg_teardown);
		tcase_add_loop_test(tc, test_job_stmt, 0, NPG);
		tcase_add_loop_test(tc, test_check_stmt, 0, NPG);
		tcase_add_test(tc, test_savepoint);
		tcase_set_timeout(tc, 120);
		suite_add_tcase(s, tc);
	}
#endif
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(wh_txn_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
