/*
 * test_store_ops.c - every operation of the state store (store.h), with
 * its results, against each implementation: SQLite always, PostgreSQL
 * (store_pg.c, through the module as the daemon loads it) when
 * BACKFILLD_TEST_STATE_PG names a server (store_pg_fixture.h;
 * tests/integration/test_store_pg.py starts a throwaway cluster).
 * test_store.c holds the seam's own cases (the failure policy, SQLite's
 * migrations and WAL); this file the rest of each operation's meaning,
 * and PostgreSQL's own machinery: its migrations, nodes opening together,
 * fencing, failed statements, reconnection, password_file.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store.h"
#ifdef HAVE_LIBPQ
#include "store_pg_fixture.h"
#endif

static struct store *st;
static bool on_pg;
static char dir[64];
static char path[128];

/* ---- SQLite ---------------------------------------------------------- */

static void
sqlite_setup(void)
{
	struct err err;

	snprintf(dir, sizeof dir, "/tmp/test_store_ops.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/state.db", dir);
	if (store_open(path, &st, &err) < 0)
		ck_abort_msg("store_open: %s", err.msg);
	on_pg = false;
}

static void
sqlite_teardown(void)
{
	char cmd[160];

	store_close(st);
	st = NULL;
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A single integer from SQL on a second SQLite connection (-1: no row). */
static long long
sqlite_peek(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	long long v = -1;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* ---- PostgreSQL ------------------------------------------------------ */

#ifdef HAVE_LIBPQ
/* A fresh PostgreSQL store in a schema of its own. */
static void
pg_setup(void)
{
	pgfix_open(&st);
	on_pg = true;
}

/* Close it and drop its schema. */
static void
pg_teardown(void)
{
	pgfix_close(st);
	st = NULL;
}
#endif

/* An integer from SQL on a second connection to the store under test. */
static long long
peek(const char *sql)
{
#ifdef HAVE_LIBPQ
	if (on_pg)
		return pgfix_peek(sql);
#endif
	return sqlite_peek(sql);
}

/* ---- helpers --------------------------------------------------------- */

/* A request of job fct; returns its id. */
static int64_t
request(const char *kind, int64_t at)
{
	struct store_request rq = { .job = "fct", .kind = kind,
		.created_at = at };
	struct err err;
	int64_t id;

	ck_assert_msg(store_request_add(st, &rq, &id, &err) == 0, "%s", err.msg);
	return id;
}

/* A manifest row of request rid; returns its id. */
static int64_t
item(int64_t rid, const char *job, const char *key, int seq, enum mstate s)
{
	struct store_item it = { .request_id = rid, .job = job, .key = key,
		.seq = seq, .state = s, .at = 10 };
	struct err err;
	int64_t id;

	ck_assert_msg(store_item_add(st, &it, &id, &err) == 0, "%s", err.msg);
	return id;
}

/* Start a run; returns its id. */
static int64_t
run(int64_t m, int64_t rid, const char *job, const char *key, int attempt,
    int64_t at)
{
	struct err err;
	int64_t id;

	ck_assert_msg(store_run_start(st, m, rid, job, key, attempt, at, "v1",
				   "cfg", 0, &id, &err) == 0, "%s", err.msg);
	return id;
}

struct rows {
	int n;
	int64_t id[16];
	char key[16][32];
	enum mstate state[16];
	char blocked_on[16][32];
	int concurrency[16];
	bool fail_fast[16], reverse[16], downstream[16];
	int attempts[16];
};

/* Collect open rows. */
static int
rows_cb(const struct store_open_row *row, void *data, struct err *err)
{
	struct rows *r = data;

	(void)err;
	ck_assert_int_lt(r->n, 16);
	r->id[r->n] = row->id;
	snprintf(r->key[r->n], 32, "%s", row->key);
	r->state[r->n] = row->state;
	snprintf(r->blocked_on[r->n], 32, "%s", row->blocked_on ?
		 row->blocked_on : "(null)");
	r->concurrency[r->n] = row->rq_concurrency;
	r->fail_fast[r->n] = row->rq_fail_fast;
	r->reverse[r->n] = row->rq_reverse;
	r->downstream[r->n] = row->downstream;
	r->attempts[r->n] = row->attempts;
	r->n++;
	return 0;
}

/* ---- the cases -------------------------------------------------------- */

/* Requests and the manifest round-trip: controls, load_open (open
 * requests only), load_request, finish, reopen, get, recent, problems,
 * counts. */
START_TEST(requests_and_manifest)
{
	struct store_request rq = { .job = "fct", .kind = "backfill",
		.reason = "refund bug", .from_key = "2026-02-01",
		.to_key = "2026-02-03", .reprocess = "failed", .reverse = true,
		.created_at = 1000, .concurrency = 3, .fail_fast = true,
		.downstream = "wk,mo" };
	int64_t rid, other, m1, m2, m3, counts[MS_COUNT], elapsed;
	char job[32], ds[32];
	struct rows r = { 0 };
	int conc;
	bool ff, finished;
	struct err err;

	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), 0);
	ck_assert_int_gt(rid, 0);
	ck_assert_int_eq(store_request_controls(st, rid, &conc, &ff, ds, sizeof ds,
					     &err), 0);
	ck_assert_int_eq(conc, 3);
	ck_assert(ff);
	ck_assert_str_eq(ds, "wk,mo");
	ck_assert_int_eq(store_request_controls(st, rid + 100, &conc, &ff, ds,
					     sizeof ds, &err), 1);
	other = request("schedule", 2000);
	ck_assert_int_eq(store_request_controls(st, other, &conc, &ff, ds,
					     sizeof ds, &err), 0);
	ck_assert_int_eq(conc, 0);
	ck_assert(!ff);
	ck_assert_str_eq(ds, "");

	m1 = item(rid, "fct", "2026-02-01", 0, MS_QUEUED);
	m2 = item(rid, "fct", "2026-02-02", 1, MS_QUEUED);
	m3 = item(rid, "wk", "2026-W05", 2, MS_BLOCKED);
	ck_assert_int_eq(store_item_add(st, &(struct store_item){ .request_id =
				     rid, .job = "fct", .key = "2026-02-02",
				     .state = MS_QUEUED, .at = 1 }, &m2, &err),
			 -1);
	ck_assert_int_eq(store_flush(st, &err), -1); /* that failed turn */
	ck_assert_int_eq(store_item_set(st, m1, MS_FAILED, 2, 5000, "boom", NULL,
				     -1, 1100, &err), 0);
	ck_assert_int_eq(store_item_set(st, m3, MS_BLOCKED, 0, 0, NULL,
				     "fct/2026-02-01", -1, 1100, &err), 0);
	ck_assert_int_eq(peek("SELECT not_before FROM manifest WHERE"
			      " error = 'boom'"), 5000);

	ck_assert_int_eq(store_load_open(st, rows_cb, &r, &err), 0);
	ck_assert_int_eq(r.n, 3); /* the schedule request has no rows */
	ck_assert_int_eq(r.id[0], m1);
	ck_assert_int_eq(r.state[0], MS_FAILED);
	ck_assert_int_eq(r.attempts[0], 2);
	ck_assert_int_eq(r.concurrency[0], 3);
	ck_assert(r.fail_fast[0] && r.reverse[0]);
	ck_assert_str_eq(r.key[1], "2026-02-02");
	ck_assert_str_eq(r.blocked_on[1], "(null)");
	ck_assert_int_eq(r.state[2], MS_BLOCKED);
	ck_assert_str_eq(r.blocked_on[2], "fct/2026-02-01");

	ck_assert_int_eq(store_request_counts(st, rid, counts, &elapsed, &err), 0);
	ck_assert_int_eq(counts[MS_QUEUED], 1);
	ck_assert_int_eq(counts[MS_FAILED], 1);
	ck_assert_int_eq(counts[MS_BLOCKED], 1);
	ck_assert_int_eq(counts[MS_SUCCEEDED], 0);
	ck_assert_int_eq(elapsed, 0); /* not finished: created - created */

	ck_assert_int_eq(store_request_finish(st, rid, 4000, true, &err), 0);
	ck_assert_int_eq(store_request_counts(st, rid, counts, &elapsed, &err), 0);
	ck_assert_int_eq(elapsed, 3000);
	ck_assert_int_eq(store_request_get(st, rid, job, sizeof job, &finished,
					&err), 0);
	ck_assert_str_eq(job, "fct");
	ck_assert(finished);
	ck_assert_int_eq(store_request_get(st, rid + 100, job, sizeof job,
					&finished, &err), 1);
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(store_load_open(st, rows_cb, &r, &err), 0);
	ck_assert_int_eq(r.n, 0);
	ck_assert_int_eq(store_load_request(st, rid, rows_cb, &r, &err), 0);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests WHERE"
			      " cancelled"), 1);
	ck_assert_int_eq(store_request_reopen(st, rid, &err), 0);
	ck_assert_int_eq(store_request_get(st, rid, job, sizeof job, &finished,
					&err), 0);
	ck_assert(!finished);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests WHERE"
			      " cancelled"), 0);
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(store_load_open(st, rows_cb, &r, &err), 0);
	ck_assert_int_eq(r.n, 3);
}
END_TEST

struct recent {
	int n;
	int64_t id[4];
	char kind[4][16];
	bool has_reason[4], finished[4], cancelled[4];
	int64_t finished_at[4];
};

/* Collect recent requests. */
static void
recent_cb(int64_t id, const char *job, const char *kind, const char *reason,
	  int64_t created_at, bool finished, int64_t finished_at,
	  bool cancelled, void *data)
{
	struct recent *r = data;

	(void)job;
	(void)created_at;
	ck_assert_int_lt(r->n, 4);
	r->id[r->n] = id;
	snprintf(r->kind[r->n], 16, "%s", kind);
	r->has_reason[r->n] = reason != NULL;
	r->finished[r->n] = finished;
	r->finished_at[r->n] = finished_at;
	r->cancelled[r->n++] = cancelled;
}

struct problems {
	int n;
	char text[4][96];
};

/* Collect a request's problems. */
static void
problem_cb(const char *job, const char *key, const char *state,
	   const char *error, const char *blocked_on, void *data)
{
	struct problems *p = data;

	ck_assert_int_lt(p->n, 4);
	snprintf(p->text[p->n++], 96, "%s %s %s %s %s", job, key, state,
		 error ? error : "-", blocked_on ? blocked_on : "-");
}

/* The newest requests first; the failed and blocked rows in run order. */
START_TEST(recent_and_problems)
{
	struct store_request rq = { .job = "fct", .kind = "rerun",
		.reason = "why", .created_at = 5 };
	struct recent rc = { 0 };
	struct problems pb = { 0 };
	int64_t a, b, c, m;
	struct err err;

	a = request("backfill", 1);
	b = request("schedule", 2);
	ck_assert_int_eq(store_request_add(st, &rq, &c, &err), 0);
	ck_assert_int_eq(store_request_finish(st, b, 9, false, &err), 0);
	ck_assert_int_eq(store_recent_requests(st, 2, recent_cb, &rc, &err), 0);
	ck_assert_int_eq(rc.n, 2);
	ck_assert_int_eq(rc.id[0], c);
	ck_assert_str_eq(rc.kind[0], "rerun");
	ck_assert(rc.has_reason[0] && !rc.finished[0]);
	ck_assert_int_eq(rc.id[1], b);
	ck_assert(!rc.has_reason[1] && rc.finished[1] && !rc.cancelled[1]);
	ck_assert_int_eq(rc.finished_at[1], 9);

	m = item(a, "fct", "k1", 0, MS_QUEUED);
	(void)item(a, "fct", "k0", 1, MS_SUCCEEDED);
	ck_assert_int_eq(store_item_set(st, m, MS_FAILED, 1, 0, "oops", NULL, -1, 3,
				     &err), 0);
	m = item(a, "wk", "w1", 2, MS_QUEUED);
	ck_assert_int_eq(store_item_set(st, m, MS_BLOCKED, 0, 0, NULL, "fct/k1", -1, 3,
				     &err), 0);
	ck_assert_int_eq(store_request_problems(st, a, problem_cb, &pb, &err), 0);
	ck_assert_int_eq(pb.n, 2);
	ck_assert_str_eq(pb.text[0], "fct k1 failed oops -");
	ck_assert_str_eq(pb.text[1], "wk w1 blocked - fct/k1");
}
END_TEST

struct orphans {
	int n;
	int64_t run, pgid, start;
	char key[32];
};

/* Collect orphans. */
static void
orphan_cb(int64_t run_id, const char *job, const char *key, int64_t pgid,
	  int64_t proc_start, void *data)
{
	struct orphans *o = data;

	(void)job;
	o->n++;
	o->run = run_id;
	o->pgid = pgid;
	o->start = proc_start;
	snprintf(o->key, sizeof o->key, "%s", key);
}

/* Runs: start, finish, process groups, orphans, recovery, unstart; the
 * runs kept are counted. */
START_TEST(runs_and_recovery)
{
	struct orphans orph = { 0 };
	struct store_stats ss;
	int64_t rid, done_rid, m1, m2, m3, r1, r2, r3, r4;
	int recovered = -1;
	struct err err;

	rid = request("backfill", 1);
	m1 = item(rid, "fct", "2026-02-08", 0, MS_RUNNING);
	m2 = item(rid, "fct", "2026-02-09", 1, MS_RUNNING);
	m3 = item(rid, "fct", "2026-02-10", 2, MS_QUEUED);
	r1 = run(m1, rid, "fct", "2026-02-08", 1, 100);
	r2 = run(m2, rid, "fct", "2026-02-09", 1, 100);
	r3 = run(m3, rid, "fct", "2026-02-10", 1, 100);
	ck_assert_int_eq(store_run_finish(st, r3, MS_SUCCEEDED, 150, NULL, 42,
				       &err), 0);
	ck_assert_int_eq(peek("SELECT rows_changed FROM runs WHERE state ="
			      " 'succeeded'"), 42);
	ck_assert_int_eq(store_run_proc(st, r1, 4242, 777, &err), 0);
	ck_assert_int_eq(store_orphans(st, orphan_cb, &orph, &err), 0);
	ck_assert_int_eq(orph.n, 1);
	ck_assert_int_eq(orph.run, r1);
	ck_assert_int_eq(orph.pgid, 4242);
	ck_assert_int_eq(orph.start, 777);
	ck_assert_str_eq(orph.key, "2026-02-08");

	/* a finished request's running rows are left alone */
	done_rid = request("backfill", 1);
	m3 = item(done_rid, "fct", "2026-02-11", 0, MS_RUNNING);
	r4 = run(m3, done_rid, "fct", "2026-02-11", 1, 100);
	ck_assert_int_eq(store_request_finish(st, done_rid, 200, true, &err), 0);

	/* the interrupted runs were attempt 1 and 2 of their items */
	ck_assert_int_eq(store_item_set(st, m1, MS_RUNNING, 1, 0, NULL, NULL,
					-1, 100, &err), 0);
	ck_assert_int_eq(store_item_set(st, m2, MS_RUNNING, 2, 0, NULL, NULL,
					-1, 100, &err), 0);
	store_stats(st, &ss);
	ck_assert_int_eq(ss.runs_kept, 4);
	ck_assert_int_gt(ss.db_bytes, 0);
	ck_assert_int_eq(store_recover(st, 3000, NULL, 0, &recovered, &err), 0);
	ck_assert_int_eq(recovered, 2);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest WHERE state ="
			      " 'queued'"), 3);
	/* an interruption is no attempt: the next run is the same attempt */
	ck_assert_int_eq(peek("SELECT SUM(attempts) FROM manifest WHERE"
			      " partition_key IN ('2026-02-08', '2026-02-09')"),
			 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE state ="
			      " 'failed' AND finished_at = 3000 AND error LIKE"
			      " 'interrupted:%'"), 2);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE state ="
			      " 'running'"), 1);
	(void)r2;
	(void)r4;

	/* a run that never started goes, unless it was audited */
	ck_assert_int_eq(store_run_unstart(st, r2, &err), 0);
	ck_assert_int_eq(store_audit_add(st, r1, "2026-02-08", false, 0, false, 0,
				      NULL, NULL, NULL, NULL, true, NULL, NULL, -1,
				      &err), 0);
	ck_assert_int_eq(store_run_unstart(st, r1, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs"), 3);
	store_stats(st, &ss);
	ck_assert_int_eq(ss.runs_kept, 3);
}
END_TEST

struct running {
	int n;
	int64_t id[8], manifest[8];
	char keys[8][32];
};

/* Collect the runs left running. */
static void
running_cb(const struct store_running_row *row, void *data)
{
	struct running *r = data;

	r->id[r->n] = row->id;
	r->manifest[r->n] = row->manifest_id;
	snprintf(r->keys[r->n], sizeof r->keys[r->n], "%s", row->key);
	r->n++;
}

/* A new planner's recovery (PostgreSQL): the runs left running are
 * listed, and those it adopts stay running with their manifest rows;
 * the SQLite store takes none. */
START_TEST(recovery_keeps_adopted)
{
	struct running rr = { 0 };
	int64_t rid, m1, m2, r1, r2;
	int recovered = -1;
	struct err err;

	rid = request("backfill", 1);
	m1 = item(rid, "fct", "2026-02-08", 0, MS_RUNNING);
	m2 = item(rid, "fct", "2026-02-09", 1, MS_RUNNING);
	r1 = run(m1, rid, "fct", "2026-02-08", 1, 100);
	r2 = run(m2, rid, "fct", "2026-02-09", 1, 100);
	if (!on_pg) {
		ck_assert_int_eq(store_running_runs(st, running_cb, &rr, &err),
				 0);
		ck_assert_int_eq(rr.n, 0);
		ck_assert_int_eq(store_recover(st, 3000, &r1, 1, &recovered,
					       &err), -1);
		return;
	}
	ck_assert_int_eq(store_running_runs(st, running_cb, &rr, &err), 0);
	ck_assert_int_eq(rr.n, 2);
	ck_assert_int_eq(rr.id[0], r1);
	ck_assert_int_eq(rr.manifest[0], m1);
	ck_assert_str_eq(rr.keys[1], "2026-02-09");
	ck_assert_int_eq(store_recover(st, 3000, &r1, 1, &recovered, &err), 0);
	ck_assert_int_eq(recovered, 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE state ="
			      " 'running'"), 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest WHERE state ="
			      " 'running'"), 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE state ="
			      " 'failed' AND error LIKE 'interrupted:%'"), 1);
	(void)m2;
	(void)r2;
}
END_TEST

struct seen {
	int n;
	char keys[8][32];
	enum mstate states[8];
};

/* Collect last states. */
static void
seen_cb(const char *key, enum mstate s, void *data)
{
	struct seen *sn = data;

	snprintf(sn->keys[sn->n], 32, "%s", key);
	sn->states[sn->n++] = s;
}

/* partition_finished's callback: the state replaced, once. */
static void
prev_cb(const char *job, enum mstate prev, enum mstate state, void *data)
{
	int *out = data;

	ck_assert_str_eq(job, "fct");
	ck_assert_int_eq(*out, -1); /* called once */
	ck_assert_int_lt(state, MS_COUNT);
	*out = (int)prev;
}

/* Finish a run and make it its partition's newest; returns the state it
 * replaced. */
static enum mstate
finish(int64_t r, const char *key, enum mstate state)
{
	int prev = -1;
	struct err err;

	ck_assert_int_eq(store_run_finish(st, r, state, 2, NULL, -1, &err), 0);
	ck_assert_int_eq(store_partition_finished(st, "fct", key, r, state,
						  prev_cb, &prev, &err), 0);
	ck_assert_int_ne(prev, -1);
	return (enum mstate)prev;
}

struct counted {
	int64_t succeeded, failed, other_jobs;
};

/* Collect the per-job counts. */
static void
counted_cb(const char *job, enum mstate state, int64_t count, void *data)
{
	struct counted *c = data;

	if (strcmp(job, "fct") != 0)
		c->other_jobs += count;
	else if (state == MS_SUCCEEDED)
		c->succeeded = count;
	else if (state == MS_FAILED)
		c->failed = count;
}

/* The last finished run decides a partition's state; each finish says
 * what it replaced; the range is in key order. */
START_TEST(last_states)
{
	struct seen sn = { 0 };
	struct counted c = { 0 };
	int64_t rid, m;

	rid = request("backfill", 1);
	m = item(rid, "fct", "2026-02-08", 0, MS_QUEUED);
	ck_assert_int_eq(finish(run(m, rid, "fct", "2026-02-08", 1, 1),
				"2026-02-08", MS_FAILED), MS_NONE);
	ck_assert_int_eq(finish(run(m, rid, "fct", "2026-02-08", 2, 3),
				"2026-02-08", MS_SUCCEEDED), MS_FAILED);
	ck_assert_int_eq(finish(run(m, rid, "fct", "2026-02-09", 1, 5),
				"2026-02-09", MS_FAILED), MS_NONE);
	/* outside the range, in byte order ('2026-02-1' > '2026-02-09') */
	ck_assert_int_eq(finish(run(m, rid, "fct", "2026-03-01", 1, 5),
				"2026-03-01", MS_SUCCEEDED), MS_NONE);
	ck_assert_int_eq(store_last_states(st, "fct", "2026-02-01", "2026-02-28",
					seen_cb, &sn, NULL), 0);
	ck_assert_int_eq(sn.n, 2);
	for (int i = 0; i < sn.n; i++) {
		if (strcmp(sn.keys[i], "2026-02-08") == 0)
			ck_assert_int_eq(sn.states[i], MS_SUCCEEDED);
		else
			ck_assert_int_eq(sn.states[i], MS_FAILED);
	}
	ck_assert_int_eq(store_latest_counts(st, counted_cb, &c, NULL), 0);
	ck_assert_int_eq(c.succeeded, 2);
	ck_assert_int_eq(c.failed, 1);
	ck_assert_int_eq(c.other_jobs, 0);
}
END_TEST

struct keys {
	int n;
	char key[8][32];
	int64_t built[8];
	bool has_inputs[8];
	int64_t inputs[8];
};

/* Collect keys. */
static int
key_cb(const char *key, void *data, struct err *err)
{
	struct keys *k = data;

	(void)err;
	snprintf(k->key[k->n++], 32, "%s", key);
	return 0;
}

/* Collect builds. */
static int
built_cb(const char *key, int64_t built_at, bool has_inputs_at,
	 int64_t inputs_at, void *data, struct err *err)
{
	struct keys *k = data;

	(void)err;
	k->built[k->n] = built_at;
	k->has_inputs[k->n] = has_inputs_at;
	k->inputs[k->n] = inputs_at;
	snprintf(k->key[k->n++], 32, "%s", key);
	return 0;
}

/* Builds: recorded, replaced, read one at a time, by code version, by
 * job in key order, the newest in a range. */
START_TEST(builds)
{
	struct keys k = { 0 };
	int64_t built = -5, inputs;
	struct err err;

	ck_assert_int_eq(store_partition_get(st, "wk", "2026-02-02", &built,
					  &inputs, NULL, 0, &err), 1);
	ck_assert_int_eq(store_newest_build(st, "wk", "2026-01-01", "2026-12-31",
					 &built, &err), 1);
	ck_assert_int_eq(store_partition_built(st, "wk", "2026-02-02", 50, 40, 7,
					    "v1", &err), 0);
	ck_assert_int_eq(store_partition_get(st, "wk", "2026-02-02", &built,
					  &inputs, NULL, 0, &err), 0);
	ck_assert_int_eq(built, 50);
	ck_assert_int_eq(inputs, 40);
	ck_assert_int_eq(store_partition_built(st, "wk", "2026-02-02", 60, -1, 8,
					    "v2", &err), 0);
	ck_assert_int_eq(store_partition_get(st, "wk", "2026-02-02", &built,
					  &inputs, NULL, 0, &err), 0);
	ck_assert_int_eq(built, 60);
	ck_assert_int_eq(inputs, -1);
	ck_assert_int_eq(store_partition_built(st, "wk", "2026-01-26", 70, 65, 9,
					    "v1", &err), 0);
	ck_assert_int_eq(store_partition_built(st, "wk", "2026-02-09", 55, 1, 10,
					    "v1", &err), 0);
	ck_assert_int_eq(store_keys_built_by(st, "wk", "v1", key_cb, &k, &err), 0);
	ck_assert_int_eq(k.n, 2);
	ck_assert_str_eq(k.key[0], "2026-01-26");
	ck_assert_str_eq(k.key[1], "2026-02-09");
	memset(&k, 0, sizeof k);
	ck_assert_int_eq(store_partitions_of(st, "wk", built_cb, &k, &err), 0);
	ck_assert_int_eq(k.n, 3);
	ck_assert_str_eq(k.key[1], "2026-02-02");
	ck_assert_int_eq(k.built[1], 60);
	ck_assert(!k.has_inputs[1]);
	ck_assert(k.has_inputs[0]);
	ck_assert_int_eq(k.inputs[0], 65);
	ck_assert_int_eq(store_newest_build(st, "wk", "2026-02-01", "2026-02-28",
					 &built, &err), 0);
	ck_assert_int_eq(built, 60);
	ck_assert_int_eq(store_newest_build(st, "fct", "2026-02-01", "2026-02-28",
					 &built, &err), 1);
}
END_TEST

/* Job state persists, late_data fields included; unknown jobs read as
 * defaults. */
START_TEST(job_state)
{
	struct store_job_state js = { 0 }, back;
	struct err err;

	js.has_watermark = true;
	strcpy(js.watermark, "2026-02-22");
	strcpy(js.catchup, "refused");
	strcpy(js.gap_from, "2024-01-01");
	strcpy(js.gap_to, "2026-02-21");
	js.paused = true;
	js.paused_at = 99;
	js.has_late_since = true;
	js.late_since = 1234;
	js.has_late_checked = true;
	js.late_checked_at = 2345;
	js.late_found = 3;
	strcpy(js.late_error, "late: no table");
	js.has_reconciled = true;
	strcpy(js.reconciled, "2026-02-08");
	ck_assert_int_eq(store_job_put(st, "fct", &js, 100, &err), 0);
	ck_assert_int_eq(store_job_get(st, "fct", &back, &err), 0);
	ck_assert(back.has_watermark);
	ck_assert_str_eq(back.watermark, "2026-02-22");
	ck_assert_str_eq(back.catchup, "refused");
	ck_assert_str_eq(back.gap_from, "2024-01-01");
	ck_assert_str_eq(back.gap_to, "2026-02-21");
	ck_assert(back.paused);
	ck_assert_int_eq(back.paused_at, 99);
	ck_assert(back.has_late_since);
	ck_assert_int_eq(back.late_since, 1234);
	ck_assert(back.has_late_checked);
	ck_assert_int_eq(back.late_checked_at, 2345);
	ck_assert_int_eq(back.late_found, 3);
	ck_assert_str_eq(back.late_error, "late: no table");
	ck_assert(back.has_reconciled);
	ck_assert_str_eq(back.reconciled, "2026-02-08");
	/* overwritten: cleared fields read back cleared */
	memset(&js, 0, sizeof js);
	ck_assert_int_eq(store_job_put(st, "fct", &js, 200, &err), 0);
	ck_assert_int_eq(store_job_get(st, "fct", &back, &err), 0);
	ck_assert(!back.has_watermark && !back.paused);
	ck_assert(!back.has_late_since && !back.has_late_checked);
	ck_assert(!back.has_reconciled);
	ck_assert_str_eq(back.catchup, "ok");
	ck_assert_str_eq(back.gap_to, "");
	ck_assert_str_eq(back.late_error, "");
	ck_assert_int_eq(peek("SELECT updated_at FROM jobs WHERE job = 'fct'"),
			 200);
	ck_assert_int_eq(store_job_get(st, "unknown", &back, &err), 0);
	ck_assert(!back.has_watermark);
	ck_assert_str_eq(back.catchup, "ok");
}
END_TEST

struct audits {
	int n;
	struct {
		char key[32], item_state[16], run_state[16], metrics[32];
		bool has_run, has_audit, passed, has_before, downstream;
		int64_t run_id, rows_after;
		bool has_changes;
		int64_t changes;
	} r[4];
};

/* Collect audit rows. */
static void
audit_cb(const struct store_audit_row *row, void *data)
{
	struct audits *a = data;
	int i = a->n++;

	snprintf(a->r[i].key, 32, "%s", row->key);
	snprintf(a->r[i].item_state, 16, "%s", row->item_state);
	snprintf(a->r[i].run_state, 16, "%s", row->run_state ?
		 row->run_state : "-");
	snprintf(a->r[i].metrics, 32, "%s", row->metrics ? row->metrics : "-");
	a->r[i].has_run = row->has_run;
	a->r[i].has_audit = row->has_audit;
	a->r[i].passed = row->passed;
	a->r[i].has_before = row->has_rows_before;
	a->r[i].downstream = row->downstream;
	a->r[i].run_id = row->run_id;
	a->r[i].rows_after = row->rows_after;
	a->r[i].has_changes = row->has_changes;
	a->r[i].changes = row->changes;
}

/* The audit: each manifest row with its latest run and that run's
 * record, which a second record for the same partition replaces. */
struct trend_seen {
	int n;
	char key[40][16];
	double v[40];
	char series[8][40];
	int nseries;
};

static void
trend_seen_cb(const char *key, double value, void *data)
{
	struct trend_seen *t = data;

	ck_assert_int_lt(t->n, 40);
	snprintf(t->key[t->n], sizeof t->key[t->n], "%s", key);
	t->v[t->n++] = value;
}

static void
trend_series_cb(const char *job, const char *metric, void *data)
{
	struct trend_seen *t = data;

	ck_assert_int_lt(t->nseries, 8);
	snprintf(t->series[t->nseries++], sizeof t->series[0], "%s/%s", job,
		 metric);
}

/* Trend values: newest first by run then key, a partition recorded again
 * replaces its value and becomes newest, trim keeps the newest N (the
 * bound: after any number of puts, at most N), series lists the pairs. */
/* Each shard's publish (shard_publishes): recorded, replaced, read for a
 * request; a partition is partial while fewer shards than nshards have
 * a row for its request and no later run of it succeeded. */
struct shard_seen {
	int n;
	int64_t request[8], run[8], after[8];
	int shard[8], nshards[8];
	char key[8][32];
};

static void
shard_seen_cb(const struct store_shard_row *row, void *data)
{
	struct shard_seen *t = data;

	ck_assert_int_lt(t->n, 8);
	ck_assert_str_eq(row->job, "fct");
	t->request[t->n] = row->request;
	t->run[t->n] = row->run_id;
	t->after[t->n] = row->rows_after;
	t->shard[t->n] = row->shard;
	t->nshards[t->n] = row->nshards;
	snprintf(t->key[t->n], 32, "%s", row->key);
	t->n++;
}

START_TEST(shard_publishes)
{
	int64_t r1 = request("backfill", 10), r2 = request("backfill", 20);
	int64_t m1 = item(r1, "fct", "2026-02-09", 1, MS_RUNNING);
	int64_t m2 = item(r2, "fct", "2026-02-09", 1, MS_RUNNING);
	int64_t run1 = run(m1, r1, "fct", "2026-02-09", 1, 30);
	struct store_shard_row row = { .request = r1, .job = "fct",
		.key = "2026-02-09", .shard = 1, .nshards = 2, .run_id = run1,
		.rows_before = 3, .rows_after = 4, .published_at = 40 };
	struct shard_seen t;
	struct err err;
	int64_t run2;

	ck_assert_int_eq(store_shard_put(st, &row, &err), 0);
	row.rows_after = 5; /* the same shard again: replaced */
	ck_assert_int_eq(store_shard_put(st, &row, &err), 0);
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_shards_of(st, r1, "fct", "2026-02-09",
					 shard_seen_cb, &t, &err), 0);
	ck_assert_int_eq(t.n, 1);
	ck_assert_int_eq(t.shard[0], 1);
	ck_assert_int_eq(t.nshards[0], 2);
	ck_assert_int_eq(t.after[0], 5);
	ck_assert_int_eq(t.run[0], run1);
	/* another request's, another partition's: not this one's */
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_shards_of(st, r2, "fct", "2026-02-09",
					 shard_seen_cb, &t, &err), 0);
	ck_assert_int_eq(t.n, 0);
	/* one of two shards: partial */
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_shards_partial(st, shard_seen_cb, &t, &err), 0);
	ck_assert_int_eq(t.n, 1);
	ck_assert_int_eq(t.request[0], r1);
	ck_assert_str_eq(t.key[0], "2026-02-09");
	/* both: not partial */
	row.shard = 2;
	ck_assert_int_eq(store_shard_put(st, &row, &err), 0);
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_shards_partial(st, shard_seen_cb, &t, &err), 0);
	ck_assert_int_eq(t.n, 0);
	/* a second request publishes shard 1, then a later run of the
	 * partition succeeds: no longer partial */
	row.request = r2;
	row.shard = 1;
	ck_assert_int_eq(store_shard_put(st, &row, &err), 0);
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_shards_partial(st, shard_seen_cb, &t, &err), 0);
	ck_assert_int_eq(t.n, 1);
	ck_assert_int_eq(t.request[0], r2);
	run2 = run(m2, r2, "fct", "2026-02-09", 1, 50);
	ck_assert_int_eq(store_run_finish(st, run2, MS_SUCCEEDED, 60, NULL, 8,
					  &err), 0);
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_shards_partial(st, shard_seen_cb, &t, &err), 0);
	ck_assert_int_eq(t.n, 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM shard_publishes"), 3);
}
END_TEST

START_TEST(trend_values)
{
	struct trend_seen t;
	struct err err;
	char key[16];

	memset(&t, 0, sizeof t);
	for (int i = 1; i <= 30; i++) {
		snprintf(key, sizeof key, "2026-01-%02d", i);
		ck_assert_int_eq(store_trend_put(st, "fct", "revenue", key,
						 100.0 + i + 0.25, 10 + i, &err), 0);
		ck_assert_int_eq(store_trend_trim(st, "fct", "revenue", 8, &err),
				 0);
	}
	ck_assert_int_eq(store_trend_put(st, "fct", "rows", "2026-01-01", 7,
					 3, &err), 0);
	ck_assert_int_eq(store_trend_values(st, "fct", "revenue", 100,
					    trend_seen_cb, &t, &err), 0);
	ck_assert_int_eq(t.n, 8);
	ck_assert_str_eq(t.key[0], "2026-01-30");
	ck_assert_double_eq(t.v[0], 130.25);
	ck_assert_str_eq(t.key[7], "2026-01-23");
	/* the same partition again, by a newer run: replaced, newest */
	ck_assert_int_eq(store_trend_put(st, "fct", "revenue", "2026-01-25",
					 -1.5, 99, &err), 0);
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_trend_values(st, "fct", "revenue", 3,
					    trend_seen_cb, &t, &err), 0);
	ck_assert_int_eq(t.n, 3);
	ck_assert_str_eq(t.key[0], "2026-01-25");
	ck_assert_double_eq(t.v[0], -1.5);
	ck_assert_str_eq(t.key[1], "2026-01-30");
	/* a batch run: one run id, newest key first */
	ck_assert_int_eq(store_trend_put(st, "fct", "revenue", "2026-02-01",
					 1, 100, &err), 0);
	ck_assert_int_eq(store_trend_put(st, "fct", "revenue", "2026-02-02",
					 2, 100, &err), 0);
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_trend_values(st, "fct", "revenue", 2,
					    trend_seen_cb, &t, &err), 0);
	ck_assert_str_eq(t.key[0], "2026-02-02");
	ck_assert_str_eq(t.key[1], "2026-02-01");
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_trend_series(st, trend_series_cb, &t, &err), 0);
	ck_assert_int_eq(t.nseries, 2);
	ck_assert_str_eq(t.series[0], "fct/revenue");
	ck_assert_str_eq(t.series[1], "fct/rows");
	/* trim to 0: the pair is gone, the other kept */
	ck_assert_int_eq(store_trend_trim(st, "fct", "revenue", 0, &err), 0);
	memset(&t, 0, sizeof t);
	ck_assert_int_eq(store_trend_values(st, "fct", "revenue", 100,
					    trend_seen_cb, &t, &err), 0);
	ck_assert_int_eq(t.n, 0);
	ck_assert_int_eq(store_trend_series(st, trend_series_cb, &t, &err), 0);
	ck_assert_int_eq(t.nseries, 1);
	ck_assert_str_eq(t.series[0], "fct/rows");
}
END_TEST

START_TEST(audit)
{
	struct audits au = { 0 };
	int64_t rid, m1, m2, r1, r2;
	struct err err;

	rid = request("backfill", 1);
	m1 = item(rid, "fct", "k1", 0, MS_QUEUED);
	m2 = item(rid, "fct", "k2", 1, MS_QUEUED);
	(void)m2;
	r1 = run(m1, rid, "fct", "k1", 1, 5);
	ck_assert_int_eq(store_audit_add(st, r1, "k1", true, 1, true, 2, "{\"a\":1}",
				      "[]", "a=1", "", false, NULL, NULL, 3, &err), 0);
	r2 = run(m1, rid, "fct", "k1", 2, 6);
	ck_assert_int_eq(store_audit_add(st, r2, "k1", true, 1, true, 5, "{\"a\":2}",
				      "[]", "a=2", "", true, NULL, NULL, -1, &err), 0);
	ck_assert_int_eq(store_audit_add(st, r2, "k1", false, 0, true, 9, NULL,
				      NULL, NULL, NULL, true, NULL, NULL, 24, &err), 0);
	ck_assert_int_eq(store_run_finish(st, r2, MS_SUCCEEDED, 7, NULL, 4, &err),
			 0);
	ck_assert_int_eq(store_audit_of(st, rid, audit_cb, &au, &err), 0);
	ck_assert_int_eq(au.n, 2);
	ck_assert_str_eq(au.r[0].key, "k1");
	ck_assert(au.r[0].has_run && au.r[0].has_audit && au.r[0].passed);
	ck_assert_int_eq(au.r[0].run_id, r2);
	ck_assert_str_eq(au.r[0].run_state, "succeeded");
	ck_assert(!au.r[0].has_before);
	ck_assert_int_eq(au.r[0].rows_after, 9);
	/* the rows its statements changed (run_audit.changes), replaced */
	ck_assert(au.r[0].has_changes);
	ck_assert_int_eq(au.r[0].changes, 24);
	ck_assert(!au.r[1].has_changes);
	ck_assert_str_eq(au.r[0].metrics, "{}");
	ck_assert_str_eq(au.r[1].key, "k2");
	ck_assert(!au.r[1].has_run && !au.r[1].has_audit);
	ck_assert_str_eq(au.r[1].item_state, "queued");
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM run_audit"), 2);
}
END_TEST

struct listing {
	int n, stop_after;
	char line[32][64];
};

/* Collect listed rows as "state key id|-"; 1 after stop_after rows. */
static int
list_cb(const struct store_run_row *row, void *data, struct err *err)
{
	struct listing *l = data;

	(void)err;
	ck_assert_int_lt(l->n, 32);
	snprintf(l->line[l->n], 64, "%s %s %s%s", row->state, row->key,
		 row->has_id ? "run" : "item",
		 row->has_started_at ? "+started" : "");
	l->n++;
	return l->stop_after > 0 && l->n % l->stop_after == 0 ? 1 : 0;
}

/* The whole listing, page by page (pages of max_rows). */
static int
list_all(const char *job, int64_t rid, const char *state, int max_rows,
	 struct listing *l, int64_t *max_id)
{
	struct store_runs_cursor *c;
	struct err err;
	int rc, pages = 0;

	ck_assert_int_eq(store_runs_open(st, job, rid, state, &c, &err), 0);
	*max_id = store_runs_max_id(c);
	while ((rc = store_runs_page(c, max_rows, list_cb, l, &err)) == 0)
		pages++;
	ck_assert_int_eq(rc, 1);
	store_runs_close(c);
	return pages + 1;
}

/* The runs listing: pending rows, runs, rows cancelled unrun, each newest
 * first; filters; pages; a callback that ends a page. */
START_TEST(runs_listing)
{
	struct listing l = { 0 };
	int64_t rid, rid2, m1, m2, m3, m4, r1, r2, max_id;
	struct err err;
	int pages;

	rid = request("backfill", 1);
	m1 = item(rid, "fct", "k1", 0, MS_QUEUED);
	m2 = item(rid, "fct", "k2", 1, MS_QUEUED);
	m3 = item(rid, "fct", "k3", 2, MS_QUEUED);
	m4 = item(rid, "fct", "k4", 3, MS_QUEUED);
	r1 = run(m1, rid, "fct", "k1", 1, 5);
	ck_assert_int_eq(store_run_finish(st, r1, MS_FAILED, 6, "x", -1, &err), 0);
	r2 = run(m1, rid, "fct", "k1", 2, 7);
	ck_assert_int_eq(store_item_set(st, m2, MS_BLOCKED, 0, 0, NULL, "up/k0", -1, 8,
				     &err), 0);
	ck_assert_int_eq(store_item_set(st, m3, MS_CANCELLED, 0, 0, "cancelled",
				     NULL, -1, 8, &err), 0);
	ck_assert_int_eq(store_item_set(st, m1, MS_RUNNING, 2, 0, NULL, NULL, -1, 8,
				     &err), 0);
	rid2 = request("rerun", 2);
	(void)item(rid2, "wk", "w1", 0, MS_QUEUED);

	pages = list_all(NULL, 0, NULL, 100, &l, &max_id);
	ck_assert_int_eq(max_id, r2);
	ck_assert_int_eq(l.n, 6);
	ck_assert_str_eq(l.line[0], "queued w1 item");
	ck_assert_str_eq(l.line[1], "queued k4 item");
	ck_assert_str_eq(l.line[2], "blocked k2 item");
	ck_assert_str_eq(l.line[3], "running k1 run+started");
	ck_assert_str_eq(l.line[4], "failed k1 run+started");
	ck_assert_str_eq(l.line[5], "cancelled k3 item");
	ck_assert_int_eq(pages, 1);
	(void)m4;

	memset(&l, 0, sizeof l);
	(void)list_all("fct", 0, NULL, 2, &l, &max_id);
	ck_assert_int_eq(l.n, 5);
	ck_assert_str_eq(l.line[0], "queued k4 item");
	memset(&l, 0, sizeof l);
	(void)list_all(NULL, rid2, NULL, 100, &l, &max_id);
	ck_assert_int_eq(l.n, 1);
	memset(&l, 0, sizeof l);
	(void)list_all(NULL, 0, "failed", 100, &l, &max_id);
	ck_assert_int_eq(l.n, 1);
	ck_assert_str_eq(l.line[0], "failed k1 run+started");
	memset(&l, 0, sizeof l);
	(void)list_all(NULL, 0, "cancelled", 100, &l, &max_id);
	ck_assert_int_eq(l.n, 1);
	memset(&l, 0, sizeof l);
	(void)list_all(NULL, 0, "blocked", 100, &l, &max_id);
	ck_assert_int_eq(l.n, 1);
	ck_assert_str_eq(l.line[0], "blocked k2 item");
	/* a callback that ends each page after one row: nothing lost or
	 * listed twice */
	memset(&l, 0, sizeof l);
	l.stop_after = 1;
	pages = list_all(NULL, 0, NULL, 100, &l, &max_id);
	ck_assert_int_eq(l.n, 6);
	ck_assert_int_ge(pages, 6);
	ck_assert_str_eq(l.line[3], "running k1 run+started");
	ck_assert_str_eq(l.line[5], "cancelled k3 item");
}
END_TEST

/* Collect listed rows' ids (the id shown) by request. */
static int
ids_cb(const struct store_run_row *row, void *data, struct err *err)
{
	int64_t *ids = data;

	(void)err;
	ck_assert_int_lt(ids[0], 7);
	ids[++ids[0]] = row->has_id ? row->id : -1;
	return 0;
}

/* One execution for two requests (rule 5): a row per request, one id
 * shown by the runs listing and the audit of either request, inside a
 * transaction (the PostgreSQL store's batched writes) as outside. */
START_TEST(shared_run)
{
	struct store_runs_cursor *c;
	struct audits au = { 0 };
	int64_t rid1, rid2, m1, m2, r1, r2, ids[8] = { 0 };
	struct err err;

	rid1 = request("backfill", 1);
	rid2 = request("rerun", 2);
	m1 = item(rid1, "fct", "k1", 0, MS_RUNNING);
	m2 = item(rid2, "fct", "k1", 0, MS_RUNNING);
	ck_assert_int_eq(store_begin(st, &err), 0);
	ck_assert_int_eq(store_run_start(st, m1, rid1, "fct", "k1", 1, 5, "v1",
					 "cfg", 0, &r1, &err), 0);
	ck_assert_int_eq(store_run_start(st, m2, rid2, "fct", "k1", 1, 5, "v1",
					 "cfg", r1, &r2, &err), 0);
	ck_assert_int_eq(store_commit(st, &err), 0);
	ck_assert_int_ne(r1, r2);
	for (int64_t rid = rid1; rid <= rid2; rid++) {
		ids[0] = 0;
		ck_assert_int_eq(store_runs_open(st, NULL, rid, NULL, &c, &err),
				 0);
		while (store_runs_page(c, 10, ids_cb, ids, &err) == 0)
			;
		store_runs_close(c);
		ck_assert_int_eq(ids[0], 1);
		ck_assert_int_eq(ids[1], r1);
	}
	ck_assert_int_eq(store_run_finish(st, r1, MS_SUCCEEDED, 6, NULL, 1,
					  &err), 0);
	ck_assert_int_eq(store_run_finish(st, r2, MS_SUCCEEDED, 6, NULL, -1,
					  &err), 0);
	ck_assert_int_eq(store_audit_of(st, rid2, audit_cb, &au, &err), 0);
	ck_assert_int_eq(au.n, 1);
	ck_assert_int_eq(au.r[0].run_id, r1);
	/* without a transaction too */
	ck_assert_int_eq(store_run_start(st, m2, rid2, "fct", "k1", 2, 7, "v1",
					 "cfg", r1, &r2, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE shared_run IS"
			      " NOT NULL"), 2);
}
END_TEST

/* Transactions: a rollback leaves nothing; a group rolled back keeps the
 * rest of its transaction on SQLite (a savepoint) and fails the whole of
 * it on PostgreSQL (store.h); a deferred transaction commits at flush
 * only (and begin/commit inside it do not commit it); probe_write
 * commits. */
START_TEST(transactions)
{
	struct err err;

	ck_assert_int_eq(store_begin(st, &err), 0);
	(void)request("backfill", 1);
	store_rollback(st);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 0);

	ck_assert_int_eq(store_begin(st, &err), 0);
	(void)request("backfill", 1);
	ck_assert_int_eq(store_begin(st, &err), 0);
	(void)request("rerun", 1);
	store_rollback(st);
	if (on_pg) {
		ck_assert_int_eq(store_commit(st, &err), -1);
		ck_assert_msg(strstr(err.msg, "a group of its writes was"
				     " rolled back") != NULL, "%s", err.msg);
		ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 0);
		/* the failed turn ends at its flush (store.c) */
		ck_assert_int_eq(store_flush(st, &err), -1);
		ck_assert_int_eq(store_begin(st, &err), 0);
		(void)request("backfill", 1);
	}
	ck_assert_int_eq(store_begin(st, &err), 0);
	(void)request("stale", 1);
	ck_assert_int_eq(store_commit(st, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 0);
	ck_assert_int_eq(store_commit(st, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 2);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests WHERE kind ="
			      " 'rerun'"), 0);

	ck_assert_int_eq(store_defer(st, &err), 0);
	(void)request("catchup", 1);
	ck_assert_int_eq(store_defer(st, &err), 0); /* already open: no-op */
	ck_assert_int_eq(store_begin(st, &err), 0);
	(void)request("catchup", 1);
	ck_assert_int_eq(store_commit(st, &err), 0);
	ck_assert_int_eq(store_commit(st, &err), 0); /* deferred: not committed */
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests WHERE kind ="
			      " 'catchup'"), 0);
	store_rollback(st); /* deferred: not rolled back either */
	ck_assert_int_eq(store_flush(st, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests WHERE kind ="
			      " 'catchup'"), 2);
	ck_assert_int_eq(store_flush(st, &err), 0); /* nothing open: no-op */

	ck_assert_int_eq(store_probe_write(st, 0, &err), 0);
	ck_assert_int_eq(store_defer(st, &err), 0);
	ck_assert_int_eq(store_probe_write(st, 0, &err), -1);
	ck_assert_int_eq(store_flush(st, &err), 0);
	store_checkpoint_on(st, NULL);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 4);
}
END_TEST

/* partition_finished's callback in a turn: how often and what it says. */
struct turn_prev {
	int calls;
	int prev[4];
};

/* Note one callback of a turn. */
static void
turn_prev_cb(const char *job, enum mstate prev, enum mstate state, void *data)
{
	struct turn_prev *t = data;

	ck_assert_str_eq(job, "fct");
	ck_assert_int_lt(state, MS_COUNT);
	ck_assert_int_lt(t->calls, 4);
	t->prev[t->calls++] = (int)prev;
}

/*
 * One turn's writes as the scheduler makes them, more than one batch of
 * each (store_pg.c sends them in batches): every row lands as written,
 * the last write of a row wins, text survives quoting, a partition
 * finished twice in one turn says what the first finish left, and the
 * callbacks come once the turn commits (on SQLite at once), never for a
 * turn that is discarded.
 */
START_TEST(one_turn_many_rows)
{
	static const char odd[] = "say \"hi\", {x} \\ y NULL";
	struct turn_prev tp = { 0 };
	struct err err;
	int64_t rid, m[300], r[300], r2;
	char key[32];

	rid = request("backfill", 1);
	ck_assert_int_eq(store_defer(st, &err), 0);
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof key, "k%03d", i);
		m[i] = item(rid, "fct", key, i, MS_QUEUED);
		ck_assert_int_eq(store_begin(st, &err), 0);
		ck_assert_int_eq(store_item_set(st, m[i], MS_RUNNING, 1, 0,
						NULL, NULL, -1, 3, &err), 0);
		r[i] = run(m[i], rid, "fct", key, 1, 3);
		ck_assert_int_eq(store_commit(st, &err), 0);
	}
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof key, "k%03d", i);
		ck_assert_int_eq(store_begin(st, &err), 0);
		ck_assert_int_eq(store_run_finish(st, r[i], i == 7 ? MS_FAILED :
						  MS_SUCCEEDED, 4,
						  i == 7 ? odd : NULL, i, &err),
				 0);
		ck_assert_int_eq(store_item_set(st, m[i], i == 7 ? MS_FAILED :
						MS_SUCCEEDED, 1, 0,
						i == 7 ? odd : NULL, NULL, -1,
						4, &err), 0);
		if (i == 5)
			ck_assert_int_eq(store_partition_finished(
			    st, "fct", key, r[i], MS_SUCCEEDED, turn_prev_cb,
			    &tp, &err), 0);
		if (i != 7)
			ck_assert_int_eq(store_partition_built(st, "fct", key,
							       4, -1, r[i],
							       "v1", &err), 0);
		ck_assert_int_eq(store_commit(st, &err), 0);
	}
	/* k005 again in the same turn: a second run fails */
	r2 = run(m[5], rid, "fct", "k005", 2, 5);
	ck_assert_int_eq(store_run_finish(st, r2, MS_FAILED, 6, "again", -1,
					  &err), 0);
	ck_assert_int_eq(store_partition_finished(st, "fct", "k005", r2,
						  MS_FAILED, turn_prev_cb,
						  &tp, &err), 0);
	ck_assert_int_eq(store_item_set(st, m[5], MS_FAILED, 2, 0, "again",
					NULL, -1, 6, &err), 0);
	if (on_pg)
		ck_assert_int_eq(tp.calls, 0); /* at the commit */
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs"), 0);
	ck_assert_int_eq(store_flush(st, &err), 0);
	ck_assert_int_eq(tp.calls, 2);
	ck_assert_int_eq(tp.prev[0], MS_NONE);
	ck_assert_int_eq(tp.prev[1], MS_SUCCEEDED);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest"), 300);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs"), 301);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest WHERE state ="
			      " 'succeeded' AND attempts = 1"), 298);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest WHERE state ="
			      " 'failed' AND error = 'say \"hi\", {x} \\ y NULL'"),
			 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest WHERE state ="
			      " 'failed' AND error = 'again' AND attempts = 2"),
			 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE state ="
			      " 'succeeded' AND rows_changed = id - (SELECT"
			      " MIN(id) FROM runs)"), 299);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs WHERE error ="
			      " 'say \"hi\", {x} \\ y NULL'"), 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM partitions WHERE"
			      " inputs_at IS NULL"), 299);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM partition_latest WHERE"
			      " partition_key = 'k005' AND state = 'failed'"),
			 1);

	/* a discarded turn: nothing written, no callback */
	ck_assert_int_eq(store_defer(st, &err), 0);
	ck_assert_int_eq(store_partition_finished(st, "fct", "k009", r[9],
						  MS_SUCCEEDED, turn_prev_cb,
						  &tp, &err), 0);
	ck_assert_int_eq(store_item_set(st, m[9], MS_QUEUED, 0, 0, NULL, NULL,
					-1, 7, &err), 0);
	st->ops->discard(st);
	if (on_pg)
		ck_assert_int_eq(tp.calls, 2);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM manifest WHERE state ="
			      " 'queued'"), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM partition_latest"), 1);
}
END_TEST

/* The schema refuses what it must: a bad kind, a partition twice in one
 * request. */
START_TEST(schema_refuses)
{
	struct store_request rq = { .job = "fct", .kind = "bogus",
		.created_at = 1 };
	struct err err;
	int64_t rid;

	ck_assert_int_eq(store_request_add(st, &rq, &rid, &err), -1);
	ck_assert_msg(strcasestr(err.msg, "check constraint") != NULL, "%s",
		      err.msg);
	ck_assert_ptr_nonnull(strstr(err.msg, "state store: adding a request"));
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 0);
}
END_TEST

/* ---- PostgreSQL only ---------------------------------------------------- */

#ifdef HAVE_LIBPQ
typedef void (*fence_fn)(struct store *st, int64_t generation);

/* The schema is at the newest version, recorded once per migration, with
 * the lease row; opening again changes nothing; a newer schema is
 * refused. */
START_TEST(pg_migrates_once)
{
	struct store *again;
	struct err err;
	long long n = peek("SELECT COUNT(*) FROM schema_version");

	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(peek("SELECT MAX(version) FROM schema_version"), n);
	ck_assert_int_eq(peek("SELECT generation FROM lease WHERE id = 1"), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM nodes"), 0);
	ck_assert_int_eq(pgfix_store_open(&again, &err), 0);
	ck_assert_str_eq(store_kind(again), "postgres");
	store_close(again);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM schema_version"), n);
	peek("INSERT INTO schema_version (version, name) VALUES (999, 'x')");
	ck_assert_int_eq(pgfix_store_open(&again, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_msg(strstr(err.msg, "state store: schema version 999 is"
			     " newer") != NULL, "%s", err.msg);
}
END_TEST

/* 010_fewer_writes.sql (docs/design-notes.md, "The PostgreSQL store's
 * writes per partition"): manifest and runs reference nothing, a run's
 * finish and a work row's claim and report change no indexed column
 * (work has its primary key only, runs no index on state), and the
 * tables updated in place leave room on their pages; run_audit keeps its
 * reference. */
START_TEST(pg_fewer_writes)
{
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM pg_constraint WHERE"
			      " contype = 'f' AND conrelid IN"
			      " ('manifest'::regclass, 'runs'::regclass)"), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM pg_constraint WHERE"
			      " contype = 'f' AND conrelid ="
			      " 'run_audit'::regclass"), 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM pg_index WHERE indrelid ="
			      " 'work'::regclass"), 1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM pg_index WHERE indrelid ="
			      " 'runs'::regclass AND indpred IS NOT NULL"), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM pg_index i JOIN pg_attribute"
			      " a ON a.attrelid = i.indrelid AND a.attnum ="
			      " ANY(i.indkey) WHERE i.indrelid IN"
			      " ('runs'::regclass, 'manifest'::regclass,"
			      " 'work'::regclass) AND a.attname IN ('state',"
			      " 'finished_at', 'claimed_by', 'updated_at')"), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM pg_class WHERE oid IN"
			      " ('runs'::regclass, 'manifest'::regclass,"
			      " 'work'::regclass) AND reloptions::text LIKE"
			      " '%fillfactor%'"), 3);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM pg_class WHERE oid ="
			      " to_regclass('runs_job_id')"), 1);
}
END_TEST

/* Nodes starting together on an empty database migrate it once. */
START_TEST(pg_concurrent_open)
{
	pid_t pids[4];
	int status;

	store_close(st);
	st = NULL;
	pgfix_reset();
	for (int i = 0; i < 4; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			struct store *s;
			struct err err;

			if (pgfix_store_open(&s, &err) < 0) {
				fprintf(stderr, "open: %s\n", err.msg);
				_exit(1);
			}
			store_close(s);
			_exit(0);
		}
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM schema_version"),
			 peek("SELECT MAX(version) FROM schema_version"));
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM lease"), 1);
}
END_TEST

/* runs_kept: a run recorded in a transaction rolled back, or in one its
 * fence refused at the commit, is not counted; a node of several hosts
 * that is not the planner counts the runs another node recorded. */
START_TEST(pg_runs_kept)
{
	fence_fn fence = (fence_fn)pgfix_symbol("store_pg_fence");
	struct store_stats ss;
	struct store *other;
	int64_t rid, m, id;
	struct err err;

	rid = request("backfill", 1);
	m = item(rid, "fct", "2026-02-08", 0, MS_RUNNING);
	(void)run(m, rid, "fct", "2026-02-08", 1, 100);
	ck_assert_int_eq(store_begin(st, &err), 0);
	(void)run(m, rid, "fct", "2026-02-08", 2, 200);
	store_rollback(st);
	store_stats(st, &ss);
	ck_assert_int_eq(ss.runs_kept, 1);

	peek("UPDATE lease SET generation = 7, holder = 'a' WHERE id = 1");
	fence(st, 7);
	ck_assert_int_eq(store_defer(st, &err), 0);
	(void)run(m, rid, "fct", "2026-02-08", 2, 300);
	peek("UPDATE lease SET generation = 8, holder = 'b' WHERE id = 1");
	ck_assert_int_eq(store_flush(st, &err), -1);
	store_stats(st, &ss);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM runs"), 1);
	ck_assert_int_eq(ss.runs_kept, 1);

	fence(st, 0); /* not the planner now: b records a run */
	ck_assert_int_eq(pgfix_store_open(&other, &err), 0);
	ck_assert_int_eq(store_run_start(other, m, rid, "fct", "2026-02-08", 2,
				      400, "v1", "cfg", 0, &id, &err), 0);
	store_close(other);
	store_stats(st, &ss);
	ck_assert_int_eq(ss.runs_kept, 2);
}
END_TEST

/* Fencing: with a generation set, transactions and lone writes check the
 * lease as they commit; once another node moved it, they are refused and
 * write nothing; a commit's check holds the lease row against a takeover
 * until the commit, and a takeover in between makes the commit fail. */
START_TEST(pg_fence)
{
	fence_fn fence = (fence_fn)pgfix_symbol("store_pg_fence");
	struct store_request rq = { .job = "f", .kind = "backfill" };
	struct err err;
	PGconn *other;
	PGresult *r;
	int64_t id;

	peek("UPDATE lease SET generation = 7, holder = 'a' WHERE id = 1");
	fence(st, 7);
	ck_assert_int_eq(store_begin(st, &err), 0);
	(void)request("backfill", 1);
	/* the holder's renewal (no key column) never waits for its own
	 * transaction */
	other = pgfix_conn();
	r = PQexec(other, "SET lock_timeout = '200ms'; UPDATE lease SET"
		   " expires_at = now() WHERE id = 1");
	ck_assert_int_eq(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	ck_assert_int_eq(store_commit(st, &err), 0);
	(void)request("backfill", 2); /* a lone write, fenced */
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 2);

	/* a takeover (it locks the row FOR UPDATE first, as cluster_pg.c's
	 * acquire does) during a transaction: its commit waits for the
	 * takeover's, sees the new generation and fails, writing nothing */
	ck_assert_int_eq(store_defer(st, &err), 0);
	(void)request("backfill", 3);
	r = PQexec(other, "BEGIN; SELECT 1 FROM lease WHERE id = 1 FOR UPDATE;"
		   " UPDATE lease SET generation = 8, holder = 'b' WHERE id = 1;"
		   " COMMIT");
	ck_assert_int_eq(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	PQfinish(other);
	ck_assert_int_eq(store_flush(st, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "deposed: another node holds the"
				     " planner lease"));
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 2);

	/* every later transaction and lone write is refused the same way */
	ck_assert_int_eq(store_begin(st, &err), 0);
	(void)request("backfill", 4);
	ck_assert_int_eq(store_commit(st, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "deposed"));
	ck_assert_int_eq(store_flush(st, &err), -1); /* the failed turn */
	ck_assert_int_eq(store_request_add(st, &rq, &id, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "deposed: another node holds the"
				     " planner lease"));
	ck_assert_int_eq(store_flush(st, &err), -1);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 2);
	/* reads are not fenced; without a fence, writes go through */
	ck_assert_int_eq(store_request_controls(st, 1, &(int){ 0 },
						&(bool){ 0 }, (char[8]){ 0 }, 8,
						&err), 0);
	fence(st, 0);
	(void)request("backfill", 5);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 3);
}
END_TEST

/* A statement that fails inside a transaction (the implementation
 * itself, under store.c's policy): the commit fails too and nothing of it
 * is written, never a silent ROLLBACK for a COMMIT; a group rolled back
 * does not repair it (store.h): its flush fails the same way. */
START_TEST(pg_failed_statement)
{
	struct store_request bad = { .job = "fct", .kind = "bogus" };
	struct store_request good = { .job = "f", .kind = "backfill" };
	const struct store_ops *ops = st->ops;
	struct err err;
	int64_t id;

	ck_assert_int_eq(ops->defer(st, &err), 0);
	ck_assert_int_eq(ops->request_add(st, &good, &id, &err), 0);
	ck_assert_int_eq(ops->request_add(st, &bad, &id, &err), -1);
	ck_assert_int_eq(ops->request_add(st, &good, &id, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "the transaction failed earlier"));
	ck_assert_int_eq(ops->flush(st, &err), -1);
	ck_assert_msg(strstr(err.msg, "rolled back: adding a request") != NULL,
		      "%s", err.msg);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 0);

	ck_assert_int_eq(ops->defer(st, &err), 0);
	ck_assert_int_eq(ops->request_add(st, &good, &id, &err), 0);
	ck_assert_int_eq(ops->begin(st, &err), 0);
	ck_assert_int_eq(ops->request_add(st, &bad, &id, &err), -1);
	ops->rollback(st);
	ck_assert_int_eq(ops->request_add(st, &good, &id, &err), -1);
	ck_assert_int_eq(ops->flush(st, &err), -1);
	ck_assert_msg(strstr(err.msg, "rolled back: adding a request") != NULL,
		      "%s", err.msg);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 0);
	ck_assert_int_eq(ops->request_add(st, &good, &id, &err), 0);
	ck_assert_int_eq(ops->request_add(st, &good, &id, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 2);

	/* discard: whatever is open goes, groups included */
	ck_assert_int_eq(ops->defer(st, &err), 0);
	ck_assert_int_eq(ops->request_add(st, &good, &id, &err), 0);
	ck_assert_int_eq(ops->begin(st, &err), 0);
	ck_assert_int_eq(ops->request_add(st, &good, &id, &err), 0);
	ops->discard(st);
	ck_assert_int_eq(ops->flush(st, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 2);
	ck_assert_int_eq(ops->request_add(st, &good, &id, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 3);
}
END_TEST

/* End the store's server process, as a restart of the server would. */
static void
pg_kill_store(void)
{
	/* waits until the backend has gone (PostgreSQL 14 and later) */
	ck_assert_int_eq(peek("SELECT COUNT(pg_terminate_backend(pid, 10000))"
			      " FROM pg_stat_activity WHERE application_name ="
			      " 'backfilld' AND pid <> pg_backend_pid()"), 1);
}

/* A connection the server dropped: a read or a transaction begun
 * connects again and goes on; a lone write fails (it is not sent twice)
 * and the next one connects again; inside a transaction, the
 * transaction fails. */
START_TEST(pg_reconnects)
{
	struct store_request rq = { .job = "f", .kind = "backfill" };
	bool finished;
	char job[8];
	struct err err;
	int64_t id;

	(void)request("backfill", 1);
	pg_kill_store();
	ck_assert_int_eq(store_request_get(st, 1, job, sizeof job, &finished,
					   &err), 0);
	pg_kill_store();
	ck_assert_int_eq(store_begin(st, &err), 0);
	(void)request("backfill", 2);
	ck_assert_int_eq(store_commit(st, &err), 0);
	pg_kill_store();
	ck_assert_int_eq(store_request_add(st, &rq, &id, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "state store: adding a request:"));
	ck_assert_int_eq(store_flush(st, &err), -1);
	(void)request("backfill", 3);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 3);

	ck_assert_int_eq(store_defer(st, &err), 0);
	(void)request("backfill", 4);
	pg_kill_store();
	ck_assert_int_eq(store_request_add(st, &rq, &id, &err), -1);
	ck_assert_int_eq(store_flush(st, &err), -1);
	ck_assert_int_eq(store_probe_write(st, 0, &err), 0);
	ck_assert_int_eq(peek("SELECT COUNT(*) FROM requests"), 3);
}
END_TEST

/* A wrong password_file: a clear error naming the server, never the
 * password; an unreadable one says so. */
START_TEST(pg_bad_password)
{
	char pwf[64];
	struct store *s;
	struct err err;
	FILE *f;

	snprintf(pwf, sizeof pwf, "/tmp/test_store_ops.pw.%d", (int)getpid());
	f = fopen(pwf, "w");
	ck_assert_ptr_nonnull(f);
	fputs("not-the-password-x9\n", f);
	fclose(f);
	ck_assert_int_eq(store_open_pg(pgfix_conninfo(), pwf, &s, &err), -1);
	unlink(pwf);
	ck_assert_msg(strstr(err.msg, "state store: cannot connect to host")
		      != NULL, "%s", err.msg);
	ck_assert_ptr_null(strstr(err.msg, "not-the-password"));
	ck_assert_ptr_null(strchr(err.msg, '\n'));
	ck_assert_int_eq(store_open_pg(pgfix_conninfo(), "/nonexistent/pw", &s,
				       &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot read password_file"
				     " /nonexistent/pw"));
}
END_TEST
#endif

/* The cases every implementation passes. */
static void
add_cases(TCase *tc)
{
	tcase_add_test(tc, requests_and_manifest);
	tcase_add_test(tc, recent_and_problems);
	tcase_add_test(tc, runs_and_recovery);
	tcase_add_test(tc, recovery_keeps_adopted);
	tcase_add_test(tc, last_states);
	tcase_add_test(tc, builds);
	tcase_add_test(tc, job_state);
	tcase_add_test(tc, trend_values);
	tcase_add_test(tc, shard_publishes);
	tcase_add_test(tc, audit);
	tcase_add_test(tc, runs_listing);
	tcase_add_test(tc, shared_run);
	tcase_add_test(tc, transactions);
	tcase_add_test(tc, one_turn_many_rows);
	tcase_add_test(tc, schema_refuses);
}

int
main(void)
{
	Suite *s = suite_create("store_ops");
	TCase *tc = tcase_create("sqlite");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, sqlite_setup, sqlite_teardown);
	add_cases(tc);
	suite_add_tcase(s, tc);
#ifdef HAVE_LIBPQ
	if (pgfix_available()) {
		tc = tcase_create("postgres");
		tcase_add_checked_fixture(tc, pg_setup, pg_teardown);
		add_cases(tc);
		tcase_add_test(tc, pg_migrates_once);
		tcase_add_test(tc, pg_fewer_writes);
		tcase_add_test(tc, pg_concurrent_open);
		tcase_add_test(tc, pg_fence);
		tcase_add_test(tc, pg_runs_kept);
		tcase_add_test(tc, pg_failed_statement);
		tcase_add_test(tc, pg_reconnects);
		if (pgfix_password_file() != NULL)
			tcase_add_test(tc, pg_bad_password);
		suite_add_tcase(s, tc);
	}
#endif
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
