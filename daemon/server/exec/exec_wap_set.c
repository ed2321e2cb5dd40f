/*
 * exec_wap_set.c - the statements of write-audit-publish on ClickHouse
 * that cover several partitions at once (exec_wap.h, chwap.h;
 * docs/clickhouse.md, "Round trips"): the state and before figures read
 * before a fill, the after figures, the clears, the marks and the drops
 * after a record, each one HTTP request per chunk of partitions instead of
 * one per partition.  Each reads or writes exactly what the statements of
 * one partition did; when one fails, the caller goes the old way, one
 * partition and statement at a time, whose errors say what is wrong.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chsql.h"
#include "chwap.h"
#include "exec_wap.h"
#include "guard.h"
#include "xalloc.h"

void
exec_wap_state_free(struct wap_state *st)
{
	free(st->kept);
	free(st->any);
	free(st->staged);
	free(st->sum_before);
	memset(st, 0, sizeof *st);
}

/* The job's metric SQL for chwap_spec (*ms malloc'd), or false when one
 * binds a value (it must then be read a partition at a time). */
static bool
exec_wap_metrics(const struct job_def *jd, const char ***ms)
{
	struct err e;
	char *out;

	*ms = xcalloc(jd->nmetrics + 1, sizeof **ms);
	for (size_t k = 0; k < jd->nmetrics; k++) {
		if (chsql_bind(jd->metrics[k].sql, NULL, 0, &out, &e) == -1) {
			free(*ms);
			*ms = NULL;
			return false;
		}
		free(out);
		(*ms)[k] = jd->metrics[k].sql;
	}
	return true;
}

const char **
exec_wap_keys(const struct exec_run *run, size_t from, size_t n)
{
	const char **keys = xcalloc(n ? n : 1, sizeof *keys);

	for (size_t i = 0; i < n; i++)
		keys[i] = run->parts[from + i].key;
	return keys;
}

/* One read of s over parts [from, from + n): 0 into r, 1 failed, -1
 * interrupted. */
static int
exec_wap_read(struct exec_flight *fl, struct wh_conn *conn,
	      const struct chwap_spec *s, size_t from, size_t n,
	      struct chwap_result *r, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	const char **keys = exec_wap_keys(run, from, n);
	char *sql = NULL, **v = NULL;
	size_t nv = 0;
	struct err e;
	int rc;

	if (exec_interrupted(fl, err)) {
		free(keys);
		return -1;
	}
	rc = chwap_sql(s, keys, n, &sql, &e);
	if (rc == 0)
		rc = conn->drv->query_column(conn, sql, NULL, 0,
		    (CHWAP_MARKS_MAX + 2) * n + 4, &v, &nv, &e);
	free(sql);
	if (rc == 0) {
		rc = chwap_parse(s, keys, v, nv, n, r, &e);
		for (size_t i = 0; i < nv; i++)
			free(v[i]);
		free(v);
	}
	free(keys);
	if (rc == 0)
		return 0;
	if (exec_stopping(fl) || err_is(&e, ERR_INTERRUPTED)) {
		*err = e;
		return -1;
	}
	return 1;
}

/* A metric's text as guard_measure reads it: *has false for "" or text
 * that is no number. */
static double
exec_wap_number(const char *text, bool *has)
{
	char *end;
	double v = strtod(text, &end);

	*has = end != text;
	return *has ? v : 0;
}

/* Part i's figures from p, before or after. */
static void
exec_wap_figures(struct exec_run *run, size_t i, const struct chwap_part *p,
		 bool after)
{
	struct exec_guard_result *g = &run->guards[i];

	guard_set_rows(g, after, p->rows);
	for (size_t k = 0; k < run->job->nmetrics; k++) {
		bool has;
		double v = exec_wap_number(p->metric[k], &has);

		guard_set_metric(g, run->job, k, after, has, v);
	}
}

void
exec_wap_forget_after(struct exec_run *run, size_t i)
{
	struct exec_guard_result *g = &run->guards[i];

	g->has_rows_after = false;
	g->rows_after = 0;
	for (size_t k = 0; k < run->job->nmetrics; k++) {
		g->metrics[k].has_after = false;
		g->metrics[k].after = 0;
		g->metrics[k].has_change = false;
	}
}

static void
exec_wap_state_alloc(struct wap_state *st, size_t nparts)
{
	if (st->kept != NULL)
		return;
	st->kept = xcalloc(nparts + 1, sizeof *st->kept);
	st->any = xcalloc(nparts + 1, sizeof *st->any);
	st->staged = xcalloc(nparts + 1, sizeof *st->staged);
	st->sum_before = xcalloc(nparts + 1, sizeof *st->sum_before);
}

/* Part i's marks against the run's requests for it (WAP-3). */
static void
exec_wap_state_part(const struct exec_run *run, size_t i,
		    const struct chwap_part *p, struct wap_state *st)
{
	st->any[i] = p->nmarks > 0;
	st->kept[i] = false;
	st->staged[i] = p->staged;
	for (size_t m = 0; m < p->nmarks; m++)
		for (size_t c = 0; c < run->ncommits && p->marks[m] > 0; c++)
			st->kept[i] |= run->commits[c].part == i &&
			    run->commits[c].request == p->marks[m];
	snprintf(st->sum_before[i], sizeof st->sum_before[i], "%s", p->sum);
}

int
exec_wap_read_state(struct exec_flight *fl, struct wh_conn *conn,
		    const struct wap_tables *t, size_t from, size_t n,
		    struct wap_state *st, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct chwap_spec s = { .table = t->live,
				.column = run->job->partition_column,
				.part_fn = chsql_grain_fn(run->job->grain),
				.nmetrics = run->job->nmetrics,
				.digest = exec_wap_digested(run, t),
				.final = exec_wap_key_final(run),
				.compound = t->compound,
				.stage = t->stage, .mark = t->mark };
	const char **ms;
	int rc = 0;

	guard_prepare(run);
	exec_wap_state_alloc(st, run->nparts);
	if (!exec_wap_metrics(run->job, &ms))
		return 1;
	s.metrics = ms;
	st->stage_exists = true;
	for (size_t c = from; c < from + n && rc == 0; c += CHWAP_CHUNK) {
		size_t m = from + n - c < CHWAP_CHUNK ? from + n - c : CHWAP_CHUNK;
		struct chwap_result r = { 0 };

		rc = exec_wap_read(fl, conn, &s, c, m, &r, err);
		for (size_t i = 0; i < m && rc == 0; i++) {
			/* more marks than were read: the old way says so */
			if (r.parts[i].nmarks >= CHWAP_MARKS_MAX)
				rc = 1;
			exec_wap_state_part(run, c + i, &r.parts[i], st);
			exec_wap_figures(run, c + i, &r.parts[i], false);
		}
		st->stage_exists &= rc != 0 || r.stage_exists;
		chwap_result_free(&r);
	}
	free(ms);
	return rc;
}

int
exec_wap_read_after(struct exec_flight *fl, struct wh_conn *conn,
		    const struct wap_tables *t, size_t from, size_t n,
		    char (*sum_after)[32], struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct chwap_spec s = { .table = t->stage,
				.column = run->job->partition_column,
				.part_fn = chsql_grain_fn(run->job->grain),
				.nmetrics = run->job->nmetrics,
				.digest = sum_after != NULL,
				.final = exec_wap_key_final(run),
				.ids_live = t->compound ? t->live : NULL };
	const char **ms;
	int rc = 0;

	if (!exec_wap_metrics(run->job, &ms))
		return 1;
	s.metrics = ms;
	for (size_t c = from; c < from + n && rc == 0; c += CHWAP_CHUNK) {
		size_t m = from + n - c < CHWAP_CHUNK ? from + n - c : CHWAP_CHUNK;
		struct chwap_result r = { 0 };

		rc = exec_wap_read(fl, conn, &s, c, m, &r, err);
		for (size_t i = 0; i < m && rc == 0; i++) {
			exec_wap_figures(run, c + i, &r.parts[i], true);
			if (t->compound) /* for the publish */
				exec_wap_parts_keep(run, conn, t,
						    run->parts[c + i].key,
						    &r.parts[i].ids);
			if (sum_after != NULL)
				snprintf(sum_after[c + i], sizeof sum_after[0],
					 "%s", r.parts[i].sum);
		}
		chwap_result_free(&r);
	}
	free(ms);
	return rc;
}

/* Split the answer of chwap_pair_sql into its two reads (the values
 * moved, their prefix dropped): false for a value of neither. */
static bool
exec_wap_split(char **v, size_t nv, char **b, size_t *nb, char **a,
	       size_t *na)
{
	bool ok = true;

	*nb = *na = 0;
	for (size_t i = 0; i < nv; i++) {
		if (v[i][0] == 'b')
			b[(*nb)++] = v[i];
		else if (v[i][0] == 'a')
			a[(*na)++] = v[i];
		else
			ok = false;
		memmove(v[i], v[i] + 1, strlen(v[i]));
	}
	return ok;
}

int
exec_wap_read_both(struct exec_flight *fl, struct wh_conn *conn,
		   const struct wap_tables *t, size_t i, char sum_before[32],
		   char sum_after[32], struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct chwap_spec s = { .table = t->live,
				.column = run->job->partition_column,
				.part_fn = chsql_grain_fn(run->job->grain),
				.nmetrics = run->job->nmetrics,
				.digest = sum_before != NULL,
				.final = exec_wap_key_final(run) };
	struct chwap_result rb = { 0 }, ra = { 0 };
	const char *key = run->parts[i].key;
	char *sql = NULL, **v = NULL, **b, **a;
	size_t nv = 0, nb, na;
	const char **ms;
	struct err e;
	int rc;

	if (!exec_wap_metrics(run->job, &ms))
		return 1;
	s.metrics = ms;
	rc = chwap_pair_sql(&s, t->stage, key, &sql, &e);
	if (rc == 0 && !exec_interrupted(fl, err))
		rc = conn->drv->query_column(conn, sql, NULL, 0, 8, &v, &nv,
					     &e);
	else if (rc == 0)
		rc = -1;
	free(sql);
	b = xcalloc(nv + 1, sizeof *b);
	a = xcalloc(nv + 1, sizeof *a);
	if (rc == 0 && (!exec_wap_split(v, nv, b, &nb, a, &na) ||
	    chwap_parse(&s, &key, a, na, 1, &ra, &e) == -1))
		rc = 1;
	if (rc == 0 && chwap_parse(&s, &key, b, nb, 1, &rb, &e) == -1)
		rc = 1;
	if (rc == 0) {
		exec_wap_figures(run, i, &rb.parts[0], false);
		exec_wap_figures(run, i, &ra.parts[0], true);
		if (sum_before != NULL) {
			snprintf(sum_before, 32, "%s", rb.parts[0].sum);
			snprintf(sum_after, 32, "%s", ra.parts[0].sum);
		}
	}
	chwap_result_free(&rb);
	chwap_result_free(&ra);
	for (size_t k = 0; k < nv; k++)
		free(v[k]);
	free(v);
	free(a);
	free(b);
	free(ms);
	if (rc == 0)
		return 0;
	if (exec_interrupted(fl, err))
		return -1;
	return 1;
}

int
exec_wap_drop_marks(struct wh_conn *conn, const struct wap_tables *t,
		    const char *const *keys, size_t n, struct err *err)
{
	for (size_t c = 0; c < n; c += CHWAP_CHUNK) {
		size_t m = n - c < CHWAP_CHUNK ? n - c : CHWAP_CHUNK;
		char *sql, **v = NULL;
		size_t nv = 0;
		int rc;

		if (chwap_mark_runs_sql(t->mark, keys + c, m, &sql, err) == -1)
			return -1;
		rc = conn->drv->query_column(conn, sql, NULL, 0,
					     CHWAP_MARKS_MAX * m + 1, &v, &nv,
					     err);
		free(sql);
		if (rc == 0 && nv > 0 &&
		    (rc = chwap_drop_runs_sql(t->mark, v, nv, &sql, err)) == 0) {
			rc = conn->drv->exec_script(conn, sql, NULL, 0, err);
			free(sql);
		}
		for (size_t i = 0; i < nv; i++)
			free(v[i]);
		free(v);
		if (rc == -1)
			return -1;
	}
	return 0;
}

/* One ALTER ... DROP PARTITION of the keys of parts [from, from + n)
 * with want[i] (none: nothing sent); of a compound key, their ids
 * (exec_wap_parts_drop, waiting for a running INSERT when want is
 * NULL: exec_wap_clear's sweep). */
static int
exec_wap_drop_some(struct wh_conn *conn, const struct wap_tables *t,
		   const struct exec_run *run, size_t from, size_t n,
		   const bool *want, struct err *err)
{
	const char *table = t->stage;
	const char **keys = xcalloc(n ? n : 1, sizeof *keys);
	size_t k = 0;
	char *sql;
	int rc;

	for (size_t i = from; i < from + n; i++)
		if (want == NULL || want[i])
			keys[k++] = run->parts[i].key;
	if (k > 0 && t->compound) {
		rc = exec_wap_parts_drop(conn, table, keys, k, want == NULL,
					 err);
		free(keys);
		return rc;
	}
	rc = k == 0 ? 0 : chwap_drop_sql(table, keys, k, &sql, err);
	free(keys);
	if (k == 0 || rc == -1)
		return rc;
	rc = conn->drv->exec_script(conn, sql, NULL, 0, err);
	free(sql);
	return rc;
}

/* The marks of the parts [from, from + n) with marked[i]. */
static int
exec_wap_drop_marked(struct wh_conn *conn, const struct wap_tables *t,
		     const struct exec_run *run, size_t from, size_t n,
		     const bool *marked, struct err *err)
{
	const char **keys = xcalloc(n ? n : 1, sizeof *keys);
	size_t k = 0;
	int rc;

	for (size_t i = from; i < from + n; i++)
		if (marked[i])
			keys[k++] = run->parts[i].key;
	rc = k == 0 ? 0 : exec_wap_drop_marks(conn, t, keys, k, err);
	free(keys);
	return rc;
}

int
exec_wap_clear(struct exec_flight *fl, struct wh_conn *conn,
	       const struct wap_tables *t, size_t from, size_t n,
	       const bool *marked, const bool *staged, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	unsigned gen;
	bool swept = exec_wap_swept(t, &gen);

	for (size_t c = from; c < from + n; c += CHWAP_CHUNK) {
		size_t m = from + n - c < CHWAP_CHUNK ? from + n - c : CHWAP_CHUNK;

		if (exec_interrupted(fl, err) ||
		    exec_wap_drop_marked(conn, t, run, c, m, marked, err) == -1 ||
		    exec_wap_drop_some(conn, t, run, c, m,
				       swept ? staged : NULL, err) == -1) {
			if (!err_is(err, ERR_INTERRUPTED))
				err_prefix(err, "clearing the stage partition");
			return -1;
		}
	}
	if (!swept)
		exec_wap_set_swept(t, gen);
	return 0;
}

/* The request that marks part i (the first of the run's identities for
 * it; 0 without any). */
int64_t
exec_wap_request(const struct exec_run *run, size_t i)
{
	for (size_t k = 0; k < run->ncommits; k++)
		if (run->commits[k].part == i)
			return run->commits[k].request;
	return 0;
}

int
exec_wap_mark_set(struct exec_flight *fl, struct wh_conn *conn,
		  const struct wap_tables *t, size_t from, size_t n,
		  struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);

	for (size_t c = from; c < from + n; c += CHWAP_CHUNK) {
		size_t m = from + n - c < CHWAP_CHUNK ? from + n - c : CHWAP_CHUNK;
		const char **keys = exec_wap_keys(run, c, m);
		int64_t *req = xcalloc(m, sizeof *req);
		char *sql = NULL;
		int rc;

		for (size_t i = 0; i < m; i++)
			req[i] = exec_wap_request(run, c + i);
		/* integers the daemon generated, not text from anyone */
		rc = chwap_mark_sql(t->mark, keys, req, m, run->run_id, &sql,
				    err);
		free(keys);
		free(req);
		if (rc == 0 && !exec_interrupted(fl, err))
			rc = conn->drv->exec_script(conn, sql, NULL, 0, err);
		else
			rc = -1;
		free(sql);
		if (rc == -1) {
			if (!err_is(err, ERR_INTERRUPTED))
				err_prefix(err, "marking the audited stage");
			return -1;
		}
	}
	return 0;
}

int
exec_wap_drop_keys(struct wh_conn *conn, const struct wap_tables *t,
		   const char *const *keys, size_t n, struct err *err)
{
	for (size_t c = 0; c < n; c += CHWAP_CHUNK) {
		size_t m = n - c < CHWAP_CHUNK ? n - c : CHWAP_CHUNK;
		char *sql;
		int rc;

		/* the marks first (WAP-1): a failure leaves the stage */
		if (exec_wap_drop_marks(conn, t, keys + c, m, err) == -1)
			return -1;
		if (t->compound) { /* each key's partitions, by id */
			if (exec_wap_parts_drop(conn, t->stage, keys + c, m,
						false, err) == -1)
				return -1;
			continue;
		}
		if (chwap_drop_sql(t->stage, keys + c, m, &sql, err) == -1)
			return -1;
		rc = conn->drv->exec_script(conn, sql, NULL, 0, err);
		free(sql);
		if (rc == -1)
			return -1;
		exec_wap_released(t, keys + c, m); /* clean (KNOWN-2) */
	}
	return 0;
}
