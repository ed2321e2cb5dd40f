/*
 * exec_wap.c - write-audit-publish on ClickHouse (docs/clickhouse.md):
 * the runs of a job on a ClickHouse warehouse and their --verify proof
 * (the statements over several partitions at once in exec_wap_set.c, the
 * fingerprints in exec_wap_digest.c, the check of the targets' partition
 * keys in exec_wap_key.c).  Called by
 * exec.c's worker threads (exec_int.h); there is no transaction: a stage
 * table is filled, audited, then swapped in by one REPLACE PARTITION.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "calendar.h"
#include "chsql.h"
#include "chstage.h"
#include "chwap.h"
#include "digest.h"
#include "exec.h"
#include "exec_int.h"
#include "exec_wap.h"
#include "fnv.h"
#include "guard.h"
#include "log.h"
#include "wh.h"
#include "xalloc.h"

/* ---- write-audit-publish (ClickHouse; docs/clickhouse.md) ----------- */

/* One statement of the sequence, naming the step when it fails. */
static int
exec_wap_step(struct exec_flight *fl, struct wh_conn *conn, const char *what,
	      const char *sql, const struct wh_param *params, size_t nparams,
	      struct err *err)
{
	return exec_wap_steps(fl, conn, what, sql, &params, nparams, 1, err);
}

/*
 * The stage and its marks.  `_backfilld_marks_TABLE` holds a row
 * (partition, request, run) for each stage partition that passed its
 * audit and is being published, a partition of the table per run.  Rules
 * that must always hold:
 *  WAP-1. A mark is written after its stage partition's audit passed and
 *     before its REPLACE; it is dropped before its stage partition is
 *     cleared or dropped.  So a mark always names a stage partition that
 *     holds exactly the audited rows.
 *  WAP-2. After its publish a stage partition and its mark stay until the
 *     state store has recorded the run (exec_release_stages, by the
 *     caller after its commit); a failed run drops them at once.
 *  WAP-3. A run that finds a mark naming one of its own requests for the
 *     partition (an earlier attempt published it, or was about to, and
 *     its record was lost to a crash) audits that stage partition again
 *     and publishes it again, unchanged: the REPLACE of the same rows
 *     twice leaves what once does.  Any other mark is stale and dropped.
 */
/* The stage and marks of table `live` (the job's, or a shard's local).
 * On several hosts each node has its own (suffixed with a hash of its
 * name), so that a node paused past its lease can never write into the
 * stage of the node that took its partition over (docs/several-hosts.md,
 * "Exactly once"). */
static void
exec_wap_tables_of(const struct config *cfg, const struct job_def *jd,
		   const char *live, struct wap_tables *t)
{
	char base[CHSQL_IDENT_MAX + 16];

	t->live = live;
	t->compound = exec_wap_key_compound(cfg, jd);
	/* what the process knows of the stage (exec_wap_known.c): of one
	 * server's alone, not of the shards' stages (all of one name) */
	t->where = cfg->warehouses[jd->warehouse].cluster == NULL ?
	    cfg->warehouses[jd->warehouse].url : NULL;
	snprintf(base, sizeof base, "%s", live);
	if (config_is_cluster(cfg) && cfg->node != NULL)
		snprintf(base, sizeof base, "%s_n%08x", live,
			 fnv1a32(FNV1A32_INIT, cfg->node, strlen(cfg->node)));
	chsql_stage_name(base, t->stage, sizeof t->stage);
	chsql_mark_name(base, t->mark, sizeof t->mark);
}

/* Drop the mark, then the stage partition, of part `params` (WAP-1). */
static int
exec_wap_drop(struct wh_conn *conn, const struct wap_tables *t,
	      const struct wh_param *params, struct err *err)
{
	const char *key = params[0].value; /* :partition, the part's key */
	char *sql;
	int rc;

	if (exec_wap_drop_marks(conn, t, &key, 1, err) == -1)
		return -1;
	if (t->compound) /* each of its partitions, by id */
		return exec_wap_parts_drop(conn, t->stage, &key, 1, false, err);
	sql = chsql_drop_part_sql(t->stage);
	rc = conn->drv->exec_script(conn, sql, params, 1, err);
	free(sql);
	return rc;
}

/* After a failure: drop part's mark and stage partition, so that no
 * stage rows are left behind; best effort, not once the run is being
 * stopped (the next run of the partition clears it first, or publishes
 * it again when it was marked: WAP-3). */
static void
exec_wap_unstage(struct exec_flight *fl, struct wh_conn *conn,
		 const struct wap_tables *t, const struct wh_param *params)
{
	struct err e;

	exec_wap_unswept(t); /* what is left is not known (KNOWN-1) */
	if (!exec_stopping(fl))
		(void)exec_wap_drop(conn, t, params, &e);
}

/* *kept: part i's stage partition is marked by one of this run's
 * requests for it (WAP-3). */
static int
exec_wap_marked(struct exec_flight *fl, struct wh_conn *conn, size_t i,
		const struct wap_tables *t, const struct wh_param *params,
		bool *kept, bool *any, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	char *sql, **v = NULL;
	size_t n = 0;
	int rc;

	*kept = false;
	*any = false;
	if (exec_interrupted(fl, err))
		return -1;
	sql = chsql_marks_of_sql(t->mark);
	rc = conn->drv->query_column(conn, sql, params, 1, 16, &v, &n, err);
	free(sql);
	if (rc == -1) {
		err_prefix(err, "reading the marks of the stage");
		return -1;
	}
	*any = n > 0;
	for (size_t k = 0; k < n; k++) {
		int64_t req = strtoll(v[k], NULL, 10);

		for (size_t c = 0; c < run->ncommits && req > 0; c++)
			*kept |= run->commits[c].part == i &&
				 run->commits[c].request == req;
		free(v[k]);
	}
	free(v);
	return 0;
}

/* Mark part i's audited stage partition (WAP-1), before its REPLACE. */
static int
exec_wap_mark(struct exec_flight *fl, struct wh_conn *conn, size_t i,
	      const struct wap_tables *t, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	const char *key = run->parts[i].key;
	int64_t req = exec_wap_request(run, i);
	char *sql;
	int rc;

	/* the daemon's own key and integers, not text from anyone; VALUES,
	 * which the server parses without analysing a query */
	if (chwap_mark_sql(t->mark, &key, &req, 1, run->run_id, &sql,
			   err) == -1)
		return -1;
	rc = exec_wap_step(fl, conn, "marking the audited stage", sql, NULL,
			   0, err);
	free(sql);
	return rc;
}

/* Tests only: BACKFILLD_TEST_CH_STOP=POINT stops the whole daemon
 * (SIGSTOP) the first time a run reaches POINT ("published": right after
 * a REPLACE, before the run's result reaches the state store), so that a
 * test can kill it there; once per daemon, a restart in place included. */
static void
exec_wap_test_stop(const char *point)
{
	static atomic_int done;
	const char *want = getenv("BACKFILLD_TEST_CH_STOP");

	if (want != NULL && strcmp(want, point) == 0 &&
	    atomic_exchange(&done, 1) == 0) {
		/* once per process, not again in the image a restart in
		 * place execs with this environment */
		unsetenv("BACKFILLD_TEST_CH_STOP");
		raise(SIGSTOP);
	}
}

/* REPLACE parts keys[0..n) from the stage, one statement for them all:
 * the server runs its REPLACEs in turn, each atomic on its own, and a
 * pause of this node cannot fall between two of them. */
static int
exec_wap_publish_keys(struct exec_flight *fl, struct wh_conn *conn,
		      const struct wap_tables *t, const char *const *keys,
		      size_t n, struct err *err)
{
	char *sql;
	int rc;

	/* the fence (docs/several-hosts.md): no REPLACE once another node may
	 * have taken the partition over, and a REPLACE that ended past it is
	 * no success of this node's */
	exec_wap_test_stop("publishing");
	if (exec_fence_check(fl, "not published", err) == -1)
		return -1;
	/* a compound key: each key's exact set of partitions, by id (none
	 * at all: nothing to send) */
	if (t->compound ?
	    exec_wap_parts_publish_sql(exec_flight_run(fl), conn, t, keys, n,
				       &sql, err) == -1 :
	    chwap_replace_sql(t->live, t->stage, keys, n, &sql, err) == -1)
		return -1;
	rc = sql == NULL ? 0 : exec_wap_step(fl, conn, "publishing", sql, NULL,
					     0, err);
	free(sql);
	if (rc == 0)
		rc = exec_fence_check(fl, "published late", err);
	if (rc == 0)
		exec_wap_test_stop("published");
	return rc;
}

/* REPLACE part `params` from the stage. */
static int
exec_wap_publish(struct exec_flight *fl, struct wh_conn *conn,
		 const struct wap_tables *t, const struct wh_param *params,
		 struct err *err)
{
	const char *key = params[0].value; /* :partition, the part's key */

	return exec_wap_publish_keys(fl, conn, t, &key, 1, err);
}

/* How exec_wap_audit comes by the after figures. */
enum wap_after {
	WAP_AFTER_READ,     /* read now, with the set statement if it can */
	WAP_AFTER_MEASURED, /* read already (exec_wap_read_after) */
	WAP_AFTER_OLD       /* read now, a statement a figure */
};

static int exec_wap_audit(struct exec_flight *fl, struct wh_conn *conn,
			  size_t i, const struct wh_param *params,
			  const struct wap_tables *t, enum wap_after how,
			  char (*sum_after)[32], struct err *err);
static int exec_wap_create(struct exec_flight *fl, struct wh_conn *conn,
			   const struct wap_tables *t, struct err *err);
/* A part's parameters and :stage. */
#define WAP_NPARAMS (EXEC_NPARAMS + 1)
static void exec_wap_params(const struct exec_run *run, size_t i,
			    const char *stage,
			    struct wh_param params[WAP_NPARAMS]);

/* Steps 1 to 3 for parts [from, from + n): their state and before
 * figures, by one statement (a chunk), the tables created when it finds
 * the stage missing or fails (the job's first run, or someone dropped
 * them: then read again); when it still cannot be read, the old way:
 * each part's before figures and marks, its stage partition taken to
 * hold rows.  *fast: the one statement read it. */
static int
exec_wap_state(struct exec_flight *fl, struct wh_conn *conn, size_t from,
	       size_t n, const struct wap_tables *t, struct wap_state *st,
	       bool *fast, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct wh_param params[WAP_NPARAMS];
	int rc = exec_wap_read_state(fl, conn, t, from, n, st, err);

	if (rc == 0 && !st->stage_exists)
		rc = exec_wap_create(fl, conn, t, err);
	else if (rc == 1 && (rc = exec_wap_create(fl, conn, t, err)) == 0)
		rc = exec_wap_read_state(fl, conn, t, from, n, st, err);
	*fast = rc == 0;
	if (rc != 1)
		return rc;
	for (size_t i = from; i < from + n; i++) {
		exec_wap_params(run, i, t->stage, params);
		if (exec_interrupted(fl, err) ||
		    guard_before_in(run, conn, i, params, EXEC_NPARAMS, t->live,
				    err) == -1 ||
		    exec_wap_marked(fl, conn, i, t, params, &st->kept[i],
				    &st->any[i], err) == -1)
			return -1;
		st->staged[i] = true;
		st->sum_before[i][0] = '\0';
	}
	return 0;
}

/* Steps 4 to 7 for part i when its stage partition is known clean
 * (exec_wap_known.c, KNOWN-3): no state read, nothing to clear; the
 * before figures (the live partition, not written before the REPLACE)
 * read with the after ones by one statement.  1: the fill failed and the
 * stage table is missing (dropped since): go the full way. */
static int
exec_wap_build_fast(struct exec_flight *fl, struct wh_conn *conn, size_t i,
		    const struct wh_param *params, const struct wap_tables *t,
		    struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	char (*sums)[32] = xcalloc(run->nparts, sizeof *sums), before[32] = "";
	bool dig = exec_wap_digested(run, t);
	enum wap_after how = WAP_AFTER_MEASURED;
	char *sql = chsql_fill_sql(t->stage, run->job->sql);
	int rc;

	rc = exec_wap_step(fl, conn, "filling the stage", sql, params,
			   WAP_NPARAMS, err);
	free(sql);
	if (rc == -1) { /* the stage dropped since it was learned? */
		struct wap_state st = { 0 };
		struct err fill = *err;

		exec_wap_unswept(t);
		if (!err_is(err, ERR_INTERRUPTED) && !exec_stopping(fl) &&
		    (rc = exec_wap_read_state(fl, conn, t, i, 1, &st, err)) != -1)
			rc = rc == 0 && st.stage_exists ? (*err = fill, -1) : 1;
		exec_wap_state_free(&st);
		free(sums);
		return rc;
	}
	rc = exec_wap_read_both(fl, conn, t, i, dig ? before : NULL, sums[i],
				err);
	if (rc == 1) { /* the old way: before from the live table, then after */
		how = WAP_AFTER_READ;
		rc = guard_before_in(run, conn, i, params, EXEC_NPARAMS,
				     t->live, err);
	}
	if (rc == 0)
		rc = exec_wap_audit(fl, conn, i, params, t, how,
				    dig ? sums : NULL, err);
	if (rc == 0)
		rc = exec_wap_fingerprint(fl, conn, i, params, t, before,
					  sums[i], err);
	if (rc == 0)
		rc = exec_wap_mark(fl, conn, i, t, err);
	free(sums);
	return rc;
}

/* Steps 1 to 7 of docs/clickhouse.md for part i: its state and before
 * figures, the stage partition cleared (its stale mark first) when it
 * holds anything, filled, audited, refused empty, marked; or, marked by
 * this run's request (WAP-3), audited again.  A part whose stage is known
 * clean goes the fast way (exec_wap_build_fast). */
static int
exec_wap_build(struct exec_flight *fl, struct wh_conn *conn, size_t i,
	       const struct wh_param *params, const struct wap_tables *t,
	       struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct wap_state st = { 0 };
	char (*sums)[32];
	bool fast, dig = exec_wap_digested(run, t);
	char *sql;
	int rc;

	/* in doubt (a retry, a batch, not known clean) the full way */
	fast = run->nparts == 1 && run->attempt <= 1 &&
	       exec_wap_clean(t, run->parts[i].key);
	exec_wap_dirty(t, run->parts[i].key); /* KNOWN-2 */
	if (fast && (rc = exec_wap_build_fast(fl, conn, i, params, t,
					      err)) != 1)
		return rc;
	sums = xcalloc(run->nparts, sizeof *sums);
	rc = exec_wap_state(fl, conn, i, 1, t, &st, &fast, err);
	if (rc == 0 && st.kept[i]) {
		rc = exec_wap_audit(fl, conn, i, params, t, WAP_AFTER_READ,
				    NULL, err);
		goto out;
	}
	if (rc == 0)
		rc = exec_wap_clear(fl, conn, t, i, 1, st.any, st.staged, err);
	if (rc == 0) /* once swept: the stage learned (KNOWN-2) */
		rc = exec_wap_learn(fl, conn, t, err);
	if (rc == 0) {
		sql = chsql_fill_sql(t->stage, run->job->sql);
		rc = exec_wap_step(fl, conn, "filling the stage", sql, params,
				   WAP_NPARAMS, err);
		free(sql);
		if (rc == -1)
			exec_wap_unswept(t);
	}
	if (rc == 0)
		rc = exec_wap_audit(fl, conn, i, params, t, WAP_AFTER_READ,
				    dig ? sums : NULL, err);
	if (rc == 0)
		rc = exec_wap_fingerprint(fl, conn, i, params, t,
					  fast ? st.sum_before[i] : "",
					  sums[i], err);
	if (rc == 0)
		rc = exec_wap_mark(fl, conn, i, t, err);
out:
	exec_wap_state_free(&st);
	free(sums);
	return rc;
}

/* Part i built (exec_wap_build), then published (step 8). */
static int
exec_wap_part(struct exec_flight *fl, struct wh_conn *conn, size_t i,
	      const struct wh_param *params, const struct wap_tables *t,
	      struct err *err)
{
	if (exec_wap_build(fl, conn, i, params, t, err) == -1)
		return -1;
	return exec_wap_publish(fl, conn, t, params, err);
}

/* Part i's audit in the stage: checks, guardrails, the empty refusal;
 * the after figures as `how` says (sum_after[i] too when not NULL). */
static int
exec_wap_audit(struct exec_flight *fl, struct wh_conn *conn, size_t i,
	       const struct wh_param *params, const struct wap_tables *t,
	       enum wap_after how, char (*sum_after)[32], struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	enum guard_outcome g;
	int rc;

	if (exec_wap_key_audit(conn, run, params, WAP_NPARAMS, t->stage,
			       err) == -1 ||
	    exec_checks(fl, conn, i, params, WAP_NPARAMS, err) != 0) {
		/* the guardrails' figures were not reached */
		if (how == WAP_AFTER_MEASURED)
			exec_wap_forget_after(run, i);
		return -1;
	}
	if (how == WAP_AFTER_READ) {
		rc = exec_wap_read_after(fl, conn, t, i, 1, sum_after, err);
		if (rc == -1)
			return -1;
		how = rc == 0 ? WAP_AFTER_MEASURED : WAP_AFTER_OLD;
	}
	if (how == WAP_AFTER_MEASURED)
		g = guard_judge_in(run, conn, i, params, EXEC_NPARAMS, true,
				   t->stage, err);
	else
		g = guard_after_in(run, conn, i, params, EXEC_NPARAMS, true,
				   t->stage, err);
	if (g != GUARD_PASSED)
		return -1;
	if (run->guards[i].rows_after == 0 && !run->job->allow_empty)
		return err_set(err, EXIT_WORK_FAILED, "refused: the stage"
			       " partition of %s is empty, and publishing it"
			       " would empty the live partition; set"
			       " allow_empty: true to allow it",
			       run->parts[i].key);
	return 0;
}

/* Params of part i with :stage. */
static void
exec_wap_params(const struct exec_run *run, size_t i, const char *stage,
		struct wh_param params[WAP_NPARAMS])
{
	exec_part_params(&run->parts[i], params);
	params[EXEC_NPARAMS].name = "stage";
	params[EXEC_NPARAMS].value = stage;
}

/* A batch's audits after its fill (the after figures of every part read
 * at once when they can be), each part's fingerprint unless kept. */
static int
exec_wap_batch_audit(struct exec_flight *fl, struct wh_conn *conn,
		     const struct wap_tables *t, const struct wap_state *st,
		     bool fast, bool kept, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	char (*sums)[32] = xcalloc(run->nparts, sizeof *sums);
	bool dig = !kept && exec_wap_digested(run, t);
	struct wh_param params[WAP_NPARAMS];
	enum wap_after how;
	int rc;

	rc = exec_wap_read_after(fl, conn, t, 0, run->nparts, dig ? sums : NULL,
				 err);
	how = rc == 0 ? WAP_AFTER_MEASURED : WAP_AFTER_OLD;
	for (size_t i = 0; i < run->nparts && rc != -1; i++) {
		exec_wap_params(run, i, t->stage, params);
		rc = exec_wap_audit(fl, conn, i, params, t, how, NULL, err);
		if (rc == 0 && !kept)
			rc = exec_wap_fingerprint(fl, conn, i, params, t,
						  fast ? st->sum_before[i] : "",
						  sums[i], err);
		/* the parts after a failed one were not audited */
		for (size_t j = i + 1; rc == -1 && how == WAP_AFTER_MEASURED &&
		     j < run->nparts; j++)
			exec_wap_forget_after(run, j);
	}
	free(sums);
	return rc == -1 ? -1 : 0;
}

/* A batch on ClickHouse: every part's state and before figures read,
 * the stage partitions that hold anything cleared (their marks first),
 * the stage filled over the batch's interval (exec_wap_batch_fill),
 * every partition audited, all marked by one INSERT, then each
 * published; or, every part marked by the batch's request (WAP-3), each
 * audited again and published again. */
static int
exec_wap_batch(struct exec_flight *fl, struct wh_conn *conn,
	       const struct wap_tables *t, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct wh_param params[WAP_NPARAMS];
	struct wap_state st = { 0 };
	int64_t published = 0;
	bool kept = true, fast;
	const char **keys;
	size_t i;
	int rc;

	for (i = 0; i < run->nparts; i++)
		exec_wap_dirty(t, run->parts[i].key); /* KNOWN-2 */
	rc = exec_wap_state(fl, conn, 0, run->nparts, t, &st, &fast, err);
	for (i = 0; i < run->nparts && rc == 0; i++)
		kept &= st.kept[i];
	if (rc == 0 && !kept)
		rc = exec_wap_clear(fl, conn, t, 0, run->nparts, st.any,
				    st.staged, err);
	if (rc == 0 && !kept) {
		rc = exec_wap_batch_fill(fl, conn, t, err);
		if (rc == -1)
			exec_wap_unswept(t);
	}
	if (rc == 0)
		rc = exec_wap_batch_audit(fl, conn, t, &st, fast, kept, err);
	if (rc == 0 && !kept)
		rc = exec_wap_mark_set(fl, conn, t, 0, run->nparts, err);
	/* a statement a chunk: a REPLACE each, one round trip */
	keys = exec_wap_keys(run, 0, run->nparts);
	for (i = 0; i < run->nparts && rc == 0; i += CHWAP_CHUNK) {
		size_t m = run->nparts - i < CHWAP_CHUNK ? run->nparts - i :
		    CHWAP_CHUNK;

		rc = exec_wap_publish_keys(fl, conn, t, keys + i, m, err);
		for (size_t k = i; k < i + m && rc == 0; k++)
			published += run->guards[k].rows_after;
	}
	free(keys);
	for (i = 0; i < run->nparts && rc == -1; i++) {
		exec_wap_params(run, i, t->stage, params);
		exec_wap_unstage(fl, conn, t, params);
	}
	exec_wap_state_free(&st);
	run->rows_changed = published;
	if (rc == 0)
		exec_flight_set_staged(fl);
	return rc;
}

/* After `CREATE ... AS live` failed with `first` (a Replicated*MergeTree
 * target's path and replica: code 253), the same engine unreplicated
 * (chstage.h); its engine read only then, never on runs that find the
 * stage.  Any other target keeps the first error. */
static int
exec_wap_create_unreplicated(struct exec_flight *fl, struct wh_conn *conn,
			     const struct wap_tables *t,
			     const struct err *first, struct err *err)
{
	char *sql = chsql_engine_sql(t->live), *engine = NULL, *create = NULL;
	bool has_row;
	int rc = -1;

	if (conn->drv->query_value(conn, sql, NULL, 0, &has_row, &engine,
				   err) == 0 && engine != NULL)
		create = chstage_create(t->stage, t->live, engine);
	free(sql);
	if (create != NULL)
		rc = exec_wap_step(fl, conn, "creating the stage table", create,
				   NULL, 0, err);
	else if (!err_is(err, ERR_INTERRUPTED))
		*err = *first;
	free(engine);
	free(create);
	return rc;
}

/* The stage table and its marks' table, created when absent. */
static int
exec_wap_create(struct exec_flight *fl, struct wh_conn *conn,
		const struct wap_tables *t, struct err *err)
{
	struct err first;
	char *sql, *old;
	int rc;

	sql = chsql_create_stage_sql(t->stage, t->live);
	rc = exec_wap_step(fl, conn, "creating the stage table", sql, NULL, 0,
			   err);
	free(sql);
	if (rc == -1 && !err_is(err, ERR_INTERRUPTED)) {
		first = *err;
		rc = exec_wap_create_unreplicated(fl, conn, t, &first, err);
	}
	if (rc == -1)
		return -1;
	/* a run's marks are one partition: one part to write, one to drop,
	 * however many partitions it marks */
	sql = chsql_create_marks_sql(t->mark);
	rc = exec_wap_step(fl, conn, "creating the stage's marks", sql, NULL,
			   0, err);
	free(sql);
	if (rc == -1)
		return -1;
	/* the marks' table of the versions before a run's marks were one
	 * partition (docs/clickhouse.md): no longer read, so it goes; a
	 * stage partition it named is cleared by its next run */
	sql = xasprintf("_backfilld_audited_%s",
			t->mark + strlen("_backfilld_marks_"));
	old = sql;
	sql = chsql_drop_table_sql(old);
	free(old);
	rc = exec_wap_step(fl, conn, "dropping the marks of an earlier"
			   " version", sql, NULL, 0, err);
	free(sql);
	return rc;
}

/* ---- shards (cluster:; docs/clickhouse.md, "Beyond one server") ------ */

/* A job's Distributed table and its shards' connections. */
struct wap_shards {
	char cluster[CHSQL_IDENT_MAX], db[CHSQL_IDENT_MAX];
	char local[CHSQL_IDENT_MAX];
	struct wh_conn **conns;  /* in shard_num order */
	size_t n;
};

void
exec_log_stopped(const struct exec_run *run, struct wh_conn *conn,
		 size_t shard)
{
	char note[300], sh[32] = "";

	if (conn == NULL || conn->drv->stopped == NULL ||
	    !conn->drv->stopped(conn, note, sizeof note))
		return;
	if (shard > 0)
		snprintf(sh, sizeof sh, " shard=%zu", shard);
	log_warn("job=%s partition=%s%s%s run=%" PRId64 "%s: %s",
		 run->job->name, run->parts[0].key, run->nparts > 1 ? ".." : "",
		 run->nparts > 1 ? run->parts[run->nparts - 1].key : "",
		 run->run_id, sh, note);
}

static void
exec_wap_shards_close(struct wap_shards *sh)
{
	for (size_t i = 0; i < sh->n; i++)
		if (sh->conns[i] != NULL)
			sh->conns[i]->drv->close(sh->conns[i]);
	free(sh->conns);
	sh->conns = NULL;
	sh->n = 0;
}

/* The shards' URLs: the configured ones (their count checked against
 * system.clusters), or each shard's first replica there, reached on the
 * configured URL's port. */
static int
exec_wap_shard_urls(struct wh_conn *conn, const struct warehouse_def *wh,
		    const struct wap_shards *sh, char ***urls, size_t *n,
		    struct err *err)
{
	/* a plain name (chsql_distributed) */
	char *sql = chsql_cluster_hosts_sql(sh->cluster), **v = NULL, u[1024];
	size_t nv = 0;
	int rc;

	*urls = NULL;
	*n = 0;
	rc = conn->drv->query_column(conn, sql, NULL, 0, 1000, &v, &nv, err);
	free(sql);
	if (rc == -1) {
		err_prefix(err, "reading the shards of cluster %s", sh->cluster);
		return -1;
	}
	if (nv == 0 || (wh->nshards > 0 && nv != wh->nshards)) {
		for (size_t i = 0; i < nv; i++)
			free(v[i]);
		free(v);
		return err_set(err, EXIT_WORK_FAILED, "cluster %s has %zu"
			       " shards in system.clusters, the warehouse's"
			       " shards: lists %zu: make them agree",
			       sh->cluster, nv, wh->nshards);
	}
	*urls = xcalloc(nv, sizeof **urls);
	for (size_t i = 0; i < nv; i++) {
		if (wh->nshards > 0)
			(*urls)[i] = xstrdup(wh->shards[i]);
		else if (chsql_shard_url(wh->url, v[i], sh->db, u,
					 sizeof u) == 0)
			(*urls)[i] = xstrdup(u);
		else
			(*urls)[i] = NULL;
		free(v[i]);
	}
	free(v);
	*n = nv;
	for (size_t i = 0; i < nv; i++)
		if ((*urls)[i] == NULL)
			return err_set(err, EXIT_WORK_FAILED, "shard %zu of"
				       " cluster %s has an address that is no"
				       " host name: list the shards' URLs in"
				       " shards:", i + 1, sh->cluster);
	return 0;
}

/* 1 when jd's table is a Distributed table over the warehouse's cluster
 * (sh filled, a connection open to each shard, watching `stop`, tagged
 * run_id), 0 when it is a table of its own (published once: a
 * ReplicatedMergeTree's replicas follow), -1 with err. */
static int
exec_wap_shards_open(struct wh_conn *conn, const struct warehouse_def *wh,
		     const struct job_def *jd, const atomic_int *stop,
		     int64_t run_id, struct wap_shards *sh, struct err *err)
{
	char *sql = chsql_engine_sql(jd->table), *engine = NULL, **urls;
	bool has_row;
	size_t n;
	int rc = 0;

	memset(sh, 0, sizeof *sh);
	rc = conn->drv->query_value(conn, sql, NULL, 0, &has_row, &engine, err);
	free(sql);
	if (rc == -1)
		return -1;
	if (engine == NULL || chsql_distributed(engine, sh->cluster, sh->db,
						sh->local, sizeof sh->local) < 0) {
		free(engine);
		return 0;
	}
	free(engine);
	if (strcmp(sh->cluster, wh->cluster) != 0)
		return err_set(err, EXIT_WORK_FAILED, "table %s is Distributed"
			       " over cluster %s, not the warehouse's cluster"
			       " %s", jd->table, sh->cluster, wh->cluster);
	if (exec_wap_shard_urls(conn, wh, sh, &urls, &n, err) == -1)
		rc = -1;
	sh->conns = xcalloc(n ? n : 1, sizeof *sh->conns);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct warehouse_def d = *wh;

		d.url = urls[i];
		if (conn->drv->open(&d, &sh->conns[i], err) == -1) {
			err_prefix(err, "shard %zu", i + 1);
			rc = -1;
			break;
		}
		sh->n = i + 1;
		if (conn->drv->watch != NULL)
			conn->drv->watch(sh->conns[i], stop, stop ? 0 : 10000,
					 false);
		if (conn->drv->tag != NULL)
			conn->drv->tag(sh->conns[i], run_id);
	}
	for (size_t i = 0; i < n; i++)
		free(urls[i]);
	free(urls);
	if (rc == -1) {
		exec_wap_shards_close(sh);
		return -1;
	}
	return 1;
}

/* Every part's mark and stage partition on every shard (after a
 * failure; best effort). */
static void
exec_wap_shards_unstage(struct exec_flight *fl, const struct wap_shards *sh,
			const struct wap_tables *t)
{
	struct exec_run *run = exec_flight_run(fl);
	struct wh_param params[WAP_NPARAMS];

	for (size_t s = 0; s < sh->n; s++)
		for (size_t i = 0; i < run->nparts; i++) {
			exec_wap_params(run, i, t->stage, params);
			exec_wap_unstage(fl, sh->conns[s], t, params);
		}
}

/* Phase 1 on shard s: each part built and audited in the shard's stage
 * (the job's SELECT runs on the shard, against its tables); the shard's
 * rows in rows[2 * i] (before) and rows[2 * i + 1] (after). */
static int
exec_wap_shard_build(struct exec_flight *fl, struct wh_conn *c,
		     const struct wap_tables *t, size_t s, int64_t *rows,
		     struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct wh_param params[WAP_NPARAMS];

	size_t c0 = run->nchecks;
	int rc = 0;

	guard_prepare(run);
	for (size_t i = 0; i < run->nparts && rc == 0; i++) {
		struct exec_metric_result *m = run->guards[i].metrics;

		/* nothing of the shard before read as this one's */
		memset(m, 0, run->job->nmetrics * sizeof *m);
		memset(&run->guards[i], 0, sizeof run->guards[i]);
		run->guards[i].metrics = m;
		exec_wap_params(run, i, t->stage, params);
		rc = exec_interrupted(fl, err) ? -1 :
		     exec_wap_build(fl, c, i, params, t, err);
		rows[2 * i] = run->guards[i].rows_before;
		rows[2 * i + 1] = run->guards[i].rows_after;
		guard_shard_keep(run, s, i); /* what it read, even failed */
	}
	for (; c0 < run->nchecks; c0++) /* each check names its shard */
		run->checks[c0].shard = (int)s + 1;
	if (rc == 0)
		return 0;
	if (!err_is(err, ERR_INTERRUPTED))
		err_prefix(err, "shard %zu", s + 1);
	return -1;
}

/* Tests only: BACKFILLD_TEST_CH_PAUSE=FIFO holds the run, the first
 * time it reaches a shard after one the state store had recorded
 * published before the run began, until a byte can be read from FIFO
 * (the test's open of FIFO to write tells it the run is held), so that a
 * test can look at the daemon meanwhile. */
static void
exec_wap_test_pause(void)
{
	static atomic_int done;
	const char *fifo = getenv("BACKFILLD_TEST_CH_PAUSE");
	FILE *f;

	if (fifo == NULL || atomic_exchange(&done, 1) != 0)
		return;
	f = fopen(fifo, "r"); /* blocks until the test opens it to write */
	if (f != NULL) {
		(void)fgetc(f);
		fclose(f);
	}
}

/* Shard s's partitions published, then the publish recorded (the state
 * store, through the loop) before the next shard's. */
static int
exec_wap_shard_publish(struct exec_flight *fl, struct wap_shards *sh,
		       const struct wap_tables *t, size_t s,
		       const int64_t *rows, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct wh_param params[WAP_NPARAMS];

	for (size_t i = 0; i < run->nparts; i++) {
		struct exec_shard_publish pub = {
			.part = i, .shard = (int)s + 1, .nshards = (int)sh->n,
			.rows_before = rows[2 * (s * run->nparts + i)],
			.rows_after = rows[2 * (s * run->nparts + i) + 1],
		};

		exec_wap_params(run, i, t->stage, params);
		if (exec_wap_publish(fl, sh->conns[s], t, params, err) == -1 ||
		    exec_shard_published(fl, &pub, err) == -1) {
			if (!err_is(err, ERR_INTERRUPTED))
				err_prefix(err, "shard %zu", s + 1);
			return -1;
		}
	}
	return 0;
}

/* Whether shard s (0-based) is recorded published already. */
static bool
exec_wap_shard_done(const struct exec_run *run, size_t s)
{
	return s < 64 && (run->shards_done >> s & 1) != 0;
}

/*
 * A run whose table is Distributed: every shard's stage built, audited
 * and marked first (a failure anywhere publishes nothing anywhere), then
 * each shard's partitions published, shard by shard, each shard's
 * publish recorded in the state store before the next one's.  There is no
 * atomic swap across shards: between two shards' REPLACE a reader of the
 * Distributed table sees the new rows of the shards done and the old rows
 * of the others.  A crash in between: the run queued again skips the
 * shards the store has for its request (run->shards_done, their audit
 * counts from the record) and publishes the others again from their
 * marked stages (WAP-3); a shard whose publish went through but whose
 * record was lost has its mark still, and publishes the same rows again.
 */
static int
exec_sql_wap_shards(struct exec_flight *fl, struct wap_shards *sh,
		    struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct wap_tables t;
	int64_t *rows = xcalloc(2 * run->nparts * sh->n, sizeof *rows);
	int rc = 0;

	exec_wap_tables_of(run->cfg, run->job, sh->local, &t);
	guard_shard_prepare(run, sh->n);
	for (size_t s = 0; s < sh->n && rc == 0; s++)
		if (!exec_wap_shard_done(run, s))
			rc = exec_wap_shard_build(fl, sh->conns[s], &t, s,
						  rows + 2 * s * run->nparts,
						  err);
	for (size_t i = 0; i < run->nparts && rc == 0; i++)
		if (guard_shard_trends(run, i, err) != GUARD_PASSED)
			rc = -1; /* on the sums, before any publish */
	for (size_t s = 0; s < sh->n && rc == 0; s++) {
		if (s > 0 && exec_wap_shard_done(run, s - 1))
			exec_wap_test_pause();
		if (exec_wap_shard_done(run, s))
			continue;
		rc = exec_wap_shard_publish(fl, sh, &t, s, rows, err);
		if (rc == 0 && s == 0)
			exec_wap_test_stop("shard");
	}
	for (size_t i = 0; i < run->nparts; i++)
		guard_shard_total(run, i); /* rows and every metric summed */
	if (rc == -1) {
		exec_wap_shards_unstage(fl, sh, &t);
		free(rows);
		return -1;
	}
	run->rows_changed = 0;
	for (size_t i = 0; i < run->nparts; i++) {
		/* the audit's row counts: the sums over the shards, the
		 * recorded ones' from their record (one part: no batch) */
		run->guards[i].has_rows_before = true;
		run->guards[i].has_rows_after = true;
		run->guards[i].rows_before = run->shards_done_before;
		run->guards[i].rows_after = run->shards_done_after;
		for (size_t s = 0; s < sh->n; s++) {
			run->guards[i].rows_before +=
			    rows[2 * (s * run->nparts + i)];
			run->guards[i].rows_after +=
			    rows[2 * (s * run->nparts + i) + 1];
		}
		run->rows_changed += run->guards[i].rows_after;
	}
	free(rows);
	exec_flight_set_staged(fl);
	return 0;
}

/*
 * A run on ClickHouse: for each partition, the stage partition cleared,
 * filled by INSERT INTO stage + the job's SELECT, audited there (checks
 * with :stage, guardrails before from the live table and after from the
 * stage, an empty stage refused unless allow_empty), marked, then
 * published by one REPLACE PARTITION; the stage partitions are kept until
 * the caller has recorded the run (WAP-2).  Nothing is published for a
 * partition whose step or check failed.
 */
int
exec_sql_wap(struct exec_flight *fl, struct wh_conn *conn, bool key_checked,
	     struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	const struct job_def *jd = run->job;
	struct wap_tables t;
	struct wh_param params[WAP_NPARAMS];
	int64_t published = 0;

	const struct warehouse_def *wh = &run->cfg->warehouses[jd->warehouse];
	struct wap_shards sh;
	int rc;

	exec_wap_tables_of(run->cfg, jd, jd->table, &t);
	if (exec_begin(conn, err) == -1 ||
	    (!key_checked && exec_wap_key(conn, run->cfg, jd, err) == -1))
		return -1;
	t.compound = exec_wap_key_compound(run->cfg, jd); /* as last checked */
	guard_read_final(exec_wap_key_final(run)); /* a Replacing engine */
	rc = wh->cluster == NULL ? 0 : exec_wap_shards_open(conn, wh, jd,
	    exec_flight_stop(fl), run->run_id, &sh, err);
	if (rc == -1)
		return -1;
	if (rc == 1 && jd->batch) {
		exec_wap_shards_close(&sh);
		return err_set(err, EXIT_BAD_INPUT, "batch: true on a"
			       " Distributed table is not supported: run the"
			       " job without batch");
	}
	run->checks = xcalloc(guard_checks_max(jd) * run->nparts *
			      (rc == 1 ? sh.n : 1), sizeof *run->checks);
	if (rc == 1) {
		rc = exec_sql_wap_shards(fl, &sh, err);
		for (size_t s = 0; s < sh.n; s++)
			exec_log_stopped(run, sh.conns[s], s + 1);
		exec_wap_shards_close(&sh);
		return rc;
	}
	/* the stage tables are created when a state read finds none */
	guard_prepare(run);
	if (jd->batch)
		return exec_wap_batch(fl, conn, &t, err);
	for (size_t i = 0; i < run->nparts; i++) {
		exec_wap_params(run, i, t.stage, params);
		if (exec_interrupted(fl, err))
			return -1;
		if (exec_wap_part(fl, conn, i, params, &t, err) == -1) {
			exec_wap_unstage(fl, conn, &t, params);
			return -1;
		}
		published += run->guards[i].rows_after;
	}
	run->rows_changed = published;
	exec_flight_set_staged(fl);
	return 0;
}

/* Once the run is recorded (WAP-2): drop the marks, then the stage
 * partitions, of `parts`, one statement a table (a chunk).  Outside any
 * run, on a worker thread. */
void
exec_wap_release(struct wh_conn *conn, const struct config *cfg,
		 const struct warehouse_def *wh, const struct job_def *jd, const struct exec_part *parts,
		 const bool *skip, size_t n)
{
	const char **keys = xcalloc(n ? n : 1, sizeof *keys);
	struct wap_tables t;
	struct wap_shards sh;
	struct err e;
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < n; i++)
		if (skip == NULL || !skip[i])
			keys[k++] = parts[i].key;
	rc = k == 0 || wh->cluster == NULL ? 0 :
	    exec_wap_shards_open(conn, wh, jd, NULL, 0, &sh, &e);
	if (rc != -1) { /* else the next run of each partition clears them */
		exec_wap_tables_of(cfg, jd, rc == 1 ? sh.local : jd->table,
				   &t);
		for (size_t s = 0; s < (rc == 1 ? sh.n : 1) && k > 0; s++)
			(void)exec_wap_drop_keys(rc == 1 ? sh.conns[s] : conn,
						 &t, keys, k, &e);
	}
	if (rc == 1)
		exec_wap_shards_close(&sh);
	free(keys);
}

/* The part of job jd whose mark says `v` (toString of its :partition:
 * "YYYY-MM-DD", or "YYYY-MM-DD HH:00:00" for hours, the UTC hour for the
 * hours of a zone); -1 when it is none
 * (text from the warehouse, checked before it is bound again). */
static int
exec_wap_part_of(const struct job_def *jd, const char *v, struct exec_part *p)
{
	char key[CAL_KEY_MAX];
	struct err e;
	part_t x;
	int64_t h;

	snprintf(key, sizeof key, "%s", v);
	if (jd->grain == GRAIN_HOUR && strlen(key) == 19 && key[10] == ' ' &&
	    strcmp(key + 13, ":00:00") == 0) {
		key[10] = 'T';
		key[13] = '\0';
	}
	if (jd->grain == GRAIN_HOUR && jd->cal.tz != NULL) {
		/* an hour of a zone is marked by its UTC hour (chsql_plain) */
		if (cal_parse_hour(key, &h, &e) < 0)
			return -1;
		x = cal_part_of(&jd->cal, h * 3600);
		if (cal_start(&jd->cal, x) != h * 3600)
			return -1;
	} else if (cal_parse_key(&jd->cal, key, &x, &e) < 0)
		return -1;
	exec_part_set(p, &jd->cal, x);
	return 0;
}

/* At start: the partitions marked by none of the open requests `keep`
 * (a crash came between a record and its release), into *parts (*n). */
int
exec_wap_stale(struct wh_conn *conn, const struct config *cfg,
	       const struct job_def *jd, const int64_t *keep, size_t nkeep,
	       const struct exec_done *done, size_t ndone,
	       struct exec_part **parts, size_t *n, struct err *err)
{
	struct wap_tables t;
	char **v = NULL, *sql, *tab;
	size_t nv = 0;
	int rc;

	*parts = NULL;
	*n = 0;
	exec_wap_tables_of(cfg, jd, jd->table, &t);
	sql = chwap_marks_sql(t.mark);
	rc = conn->drv->query_column(conn, sql, NULL, 0, 100000, &v, &nv,
				     err);
	free(sql);
	if (rc == -1)
		return -1;
	*parts = xcalloc(nv ? nv : 1, sizeof **parts);
	for (size_t i = 0; i < nv; i++) {
		int64_t req = strtoll(v[i], &tab, 10);

		if (*tab == '\t' &&
		    exec_wap_part_of(jd, tab + 1, &(*parts)[*n]) == 0 &&
		    exec_done_stale(req, (*parts)[*n].key, keep, nkeep, done,
				    ndone))
			(*n)++;
		free(v[i]);
	}
	free(v);
	return 0;
}

/* A proof (--verify) on ClickHouse: the live partition read, then the
 * stage filled twice from the job's SELECT and read after each fill; the
 * stage partition dropped, nothing published. */
int
exec_sql_wap_verify(struct exec_flight *fl, struct wh_conn *conn,
		    struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	const struct job_def *jd = run->job;
	struct wap_tables t;
	struct wh_param params[WAP_NPARAMS];
	char *sql;
	int rc = 0;

	bool distributed;

	exec_wap_tables_of(run->cfg, jd, jd->table, &t);
	exec_wap_params(run, 0, t.stage, params);
	exec_wap_dirty(&t, run->parts[0].key); /* KNOWN-2: it fills */
	if (exec_begin(conn, err) == -1 ||
	    exec_wap_key_of(conn, run->cfg, jd, &distributed, err) == -1)
		return -1;
	t.compound = exec_wap_key_compound(run->cfg, jd); /* as just checked */
	if (distributed)
		return err_set(err, EXIT_BAD_INPUT, "--verify on a Distributed"
			       " table is not supported: verify the job against"
			       " one shard's local table");
	rc = exec_wap_create(fl, conn, &t, err);
	if (rc == -1 || exec_wap_digest(conn, jd->table, jd->partition_column,
	    jd->grain, params, &run->verify_rows[0], run->verify_sum[0],
	    sizeof run->verify_sum[0], err) == -1)
		return -1;
	for (int k = 1; k < 3 && rc == 0; k++) {
		/* a stage kept for a record (its mark first: WAP-1) goes:
		 * its run is built again if it must be */
		if (exec_interrupted(fl, err) ||
		    exec_wap_drop(conn, &t, params, err) == -1)
			rc = -1;
		if (rc == 0) {
			sql = chsql_fill_sql(t.stage, jd->sql);
			rc = exec_wap_step(fl, conn, "filling the stage", sql,
					   params, WAP_NPARAMS, err);
			free(sql);
		}
		if (rc == 0)
			rc = exec_wap_digest(conn, t.stage,
			    jd->partition_column, jd->grain, params,
			    &run->verify_rows[k], run->verify_sum[k],
			    sizeof run->verify_sum[k], err);
		if (rc == -1)
			err_prefix(err, "run %d of 2", k);
	}
	exec_wap_unstage(fl, conn, &t, params);
	return rc;
}

