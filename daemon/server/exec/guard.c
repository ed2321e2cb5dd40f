/*
 * guard.c - guardrails inside a run's transaction.
 *
 * For a job that declares `table` and `partition_column`, the daemon reads
 * the partition's row count and each metric (an aggregate expression over
 * the table) before the job's statements run and again after them, in the
 * same transaction, and adds three kinds of checks to the job's own:
 *   key_unique          no two rows of the partition share the `key`
 *   min_rows            at least `min_rows` rows (default 0)
 *   max_change:NAME     the metric moved at most `max_change` percent
 *   trend:NAME          the metric after the write is within `max_sigma`
 *                       standard deviations of the values the job's runs
 *                       recorded most recently (trend.h; the history is
 *                       read by the caller: exec_run.trend)
 * A failed one fails the run, which rolls back: the old partition stays;
 * a max_change whose metric says severity: warn only warns.
 * Table and column names are the operator's configuration, quoted as
 * identifiers; metric expressions are SQL by design.  The partition is
 * always a bound parameter.
 */
#include "guard.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "chsql.h"
#include "cutoff.h"
#include "severity.h"
#include "text.h"
#include "trend.h"
#include "xalloc.h"

/* Append an identifier, double-quoted with embedded quotes doubled. */
static void
guard_ident(struct buf *b, const char *name)
{
	buf_addstr(b, "\"");
	for (const char *p = name; *p; p++) {
		if (*p == '"')
			buf_addstr(b, "\"");
		buf_add(b, p, 1);
	}
	buf_addstr(b, "\"");
}

/* The table guard_* read: the job's, or (ClickHouse) its stage after the
 * write; set by guard_after_in for the length of its call. */
static _Thread_local const char *guard_table_over;
static _Thread_local bool guard_final;

void
guard_read_final(bool final)
{
	guard_final = final;
}

static const char *
guard_table(const struct job_def *j)
{
	return guard_table_over != NULL ? guard_table_over : j->table;
}

/* A column of the job's table, qualified: "table"."column".  SQLite takes
 * an unqualified double-quoted name that matches no column for a string
 * literal; a qualified one that matches none is an error ("no such
 * column"), as in PostgreSQL. */
static void
guard_col(struct buf *b, const struct job_def *j, const char *col)
{
	guard_ident(b, guard_table(j));
	buf_addstr(b, ".");
	guard_ident(b, col);
}

/* " FROM table WHERE partition_column = :partition"; on ClickHouse (a
 * table given by guard_*_in) the column through the grain's function
 * (chsql_grain_fn), as its partition key reads it: a DateTime column
 * holding the partition's start is never equal to a day's Date there. */
static void
guard_where(struct buf *b, const struct job_def *j)
{
	buf_addstr(b, " FROM ");
	guard_ident(b, guard_table(j));
	if (guard_table_over != NULL && guard_final)
		buf_addstr(b, " FINAL");
	buf_addstr(b, " WHERE ");
	if (guard_table_over != NULL)
		buf_printf(b, "%s(", chsql_grain_fn(j->grain));
	guard_col(b, j, j->partition_column);
	buf_addstr(b, guard_table_over != NULL ? ") = :partition" :
		   " = :partition");
}

char *
guard_sql_metric(const struct job_def *j, int k)
{
	struct buf b;

	buf_init(&b);
	if (k < 0)
		buf_addstr(&b, "SELECT COUNT(*)");
	else
		buf_printf(&b, "SELECT (%s)", j->metrics[k].sql);
	guard_where(&b, j);
	buf_add(&b, "", 1);
	return buf_steal(&b);
}

char *
guard_sql_dupkey(const struct job_def *j)
{
	struct buf b;

	if (j->nkey == 0)
		return NULL;
	buf_init(&b);
	buf_addstr(&b, "SELECT ");
	for (size_t i = 0; i < j->nkey; i++) {
		buf_addstr(&b, i ? " || ', ' || '" : "'");
		for (const char *p = j->key[i]; *p; p++) {
			if (*p == '\'')
				buf_addstr(&b, "'");
			buf_add(&b, p, 1);
		}
		buf_addstr(&b, "=' || COALESCE(CAST(");
		guard_col(&b, j, j->key[i]);
		buf_addstr(&b, " AS TEXT), 'NULL')");
	}
	buf_addstr(&b, " || ' (' || CAST(COUNT(*) AS TEXT) || ' rows)'");
	guard_where(&b, j);
	buf_addstr(&b, " GROUP BY ");
	for (size_t i = 0; i < j->nkey; i++) {
		if (i)
			buf_addstr(&b, ", ");
		guard_col(&b, j, j->key[i]);
	}
	buf_addstr(&b, " HAVING COUNT(*) > 1 LIMIT 1");
	buf_add(&b, "", 1);
	return buf_steal(&b);
}

bool
guard_change(double before, double after, double *pct)
{
	if (before == 0 || !isfinite(before) || !isfinite(after))
		return false;
	*pct = (after - before) / fabs(before) * 100.0;
	return true;
}

/* One number from SQL into *v, *has false for NULL, no row or text that
 * is no number; 0, or -1 when the query failed. */
static int
guard_number(struct wh_conn *conn, const char *sql,
	     const struct wh_param *params, size_t nparams, bool *has,
	     double *v, struct err *err)
{
	bool has_row;
	char *value = NULL, *end;

	*has = false;
	if (conn->drv->query_value(conn, sql, params, nparams, &has_row, &value,
				   err) == -1)
		return -1;
	if (has_row && value != NULL) {
		*v = strtod(value, &end);
		*has = end != value;
	}
	free(value);
	return 0;
}

/* The fingerprint of part i (early cut-off, cutoff.h): its row count and
 * checksum, by the driver's verify digest, for a job whose partitions
 * feed another job's; not on a driver without one, nor on a stage
 * (ClickHouse): 1 read (*rows set), 0 not read, -1 failed. */
static int
guard_fingerprint(struct exec_run *run, struct wh_conn *conn, size_t i,
		  bool after, int64_t *rows, struct err *err)
{
	const struct job_def *j = run->job;
	struct exec_guard_result *g = &run->guards[i];
	char *sum = after ? g->sum_after : g->sum_before;

	sum[0] = '\0';
	/* CUTOFF-7; a stage (guard_table_over: ClickHouse, whose own
	 * reads are exec_wap_digest.c's) is not read here */
	if (!cutoff_fingerprinted(j, false) || conn->drv->digest == NULL ||
	    guard_table_over != NULL)
		return 0;
	if (conn->drv->digest(conn, j->table, j->partition_column,
			      run->parts[i].key, rows, sum, DIGEST_LEN,
			      err) == -1) {
		sum[0] = '\0';
		err_prefix(err, "fingerprint of %s", j->table);
		return -1;
	}
	return 1;
}

/* Rows and metrics of part i, before (after = false) or after the write. */
static int
guard_measure(struct exec_run *run, struct wh_conn *conn, size_t i,
	      const struct wh_param *params, size_t nparams, bool after,
	      struct err *err)
{
	const struct job_def *j = run->job;
	struct exec_guard_result *g = &run->guards[i];
	double v = 0;
	int64_t rows = 0;
	bool has;
	int rc, fp;

	/* the fingerprint counts the rows too: no COUNT(*) of its own */
	if ((fp = guard_fingerprint(run, conn, i, after, &rows, err)) < 0)
		return -1;
	if (fp > 0) {
		if (after) {
			g->has_rows_after = true;
			g->rows_after = rows;
		} else {
			g->has_rows_before = true;
			g->rows_before = rows;
		}
	}
	for (int k = fp > 0 ? 0 : -1; k < (int)j->nmetrics; k++) {
		char *sql = guard_sql_metric(j, k);

		rc = guard_number(conn, sql, params, nparams, &has, &v, err);
		free(sql);
		if (rc < 0) {
			err_prefix(err, "%s %s of %s", k < 0 ? "counting" :
				   "metric", k < 0 ? "rows" : j->metrics[k].name,
				   j->table);
			return -1;
		}
		if (k < 0)
			guard_set_rows(g, after, (int64_t)v);
		else
			guard_set_metric(g, j, (size_t)k, after, has, v);
	}
	return 0;
}

void
guard_set_rows(struct exec_guard_result *g, bool after, int64_t rows)
{
	if (after) {
		g->has_rows_after = true;
		g->rows_after = rows;
	} else {
		g->has_rows_before = true;
		g->rows_before = rows;
	}
}

void
guard_set_metric(struct exec_guard_result *g, const struct job_def *j,
		 size_t k, bool after, bool has, double v)
{
	struct exec_metric_result *m = &g->metrics[k];

	m->name = j->metrics[k].name;
	if (after) {
		m->has_after = has;
		m->after = v;
		/* its move, for max_change, once both sides are known */
		m->has_change = m->has_before && m->has_after &&
		    guard_change(m->before, m->after, &m->change_pct);
	} else {
		m->has_before = has;
		m->before = v;
	}
}

size_t
guard_checks_max(const struct job_def *j)
{
	/* its checks and reconciles; with table: key_unique, min_rows and
	 * the partition guardrail (a stage's: min_rows and the empty
	 * stage), max_change and trend of each metric */
	return j->nchecks + j->nreconciles +
	    (j->table != NULL ? 3 + 2 * j->nmetrics : 0);
}

void
guard_prepare(struct exec_run *run)
{
	const struct job_def *j = run->job;

	if (run->guards == NULL) {
		run->guards = xcalloc(run->nparts, sizeof *run->guards);
		for (size_t p = 0; p < run->nparts; p++)
			run->guards[p].metrics = xcalloc(j->nmetrics,
							 sizeof *run->guards[p].metrics);
	}
}

void
guard_shard_prepare(struct exec_run *run, size_t nshards)
{
	size_t n = nshards * run->nparts;

	guard_prepare(run);
	if (run->shard_guards != NULL)
		return;
	run->nshards = nshards;
	run->shard_guards = xcalloc(n + 1, sizeof *run->shard_guards);
	for (size_t p = 0; p < n; p++)
		run->shard_guards[p].metrics = xcalloc(run->job->nmetrics + 1,
		    sizeof *run->shard_guards[p].metrics);
}

void
guard_shard_keep(struct exec_run *run, size_t s, size_t i)
{
	const struct exec_guard_result *g = &run->guards[i];
	struct exec_guard_result *sg = &run->shard_guards[s * run->nparts + i];
	struct exec_metric_result *m = sg->metrics;

	memcpy(m, g->metrics, run->job->nmetrics * sizeof *m);
	*sg = *g;
	sg->metrics = m;
}

static bool guard_trend(struct exec_run *run, size_t i, size_t k,
			char *detail, size_t dsize);

enum guard_outcome
guard_shard_trends(struct exec_run *run, size_t i, struct err *err)
{
	const struct job_def *j = run->job;
	enum guard_outcome rc = GUARD_PASSED;
	char detail[400];

	/* a run resumed after some shards published: every shard of it was
	 * audited, its trends judged, by the attempt that published them */
	if (run->shards_done != 0)
		return GUARD_PASSED;
	guard_shard_total(run, i);
	for (size_t k = 0; k < j->nmetrics; k++) {
		if (!j->metrics[k].trend.has ||
		    !guard_trend(run, i, k, detail, sizeof detail))
			continue;
		if (rc == GUARD_PASSED)
			err_set(err, EXIT_WORK_FAILED, "check trend:%s failed for"
				" %s: %s", j->metrics[k].name,
				run->parts[i].key, detail);
		rc = GUARD_FAILED;
	}
	return rc;
}

void
guard_shard_total(struct exec_run *run, size_t i)
{
	struct exec_guard_result *g = &run->guards[i];

	g->has_rows_before = g->has_rows_after = true;
	g->rows_before = g->rows_after = 0;
	for (size_t s = 0; s < run->nshards; s++) {
		const struct exec_guard_result *sg =
		    &run->shard_guards[s * run->nparts + i];

		g->has_rows_before &= sg->has_rows_before;
		g->has_rows_after &= sg->has_rows_after;
		g->rows_before += sg->rows_before;
		g->rows_after += sg->rows_after;
	}
	for (size_t k = 0; k < run->job->nmetrics; k++) {
		struct exec_metric_result *m = &g->metrics[k];

		m->has_before = m->has_after = true;
		m->before = m->after = 0;
		for (size_t s = 0; s < run->nshards; s++) {
			const struct exec_guard_result *sg =
			    &run->shard_guards[s * run->nparts + i];
			const struct exec_metric_result *sm = &sg->metrics[k];

			m->has_before &= sg->has_rows_after && sm->has_before;
			m->has_after &= sg->has_rows_after && sm->has_after;
			m->before += sm->before;
			m->after += sm->after;
		}
		if (!m->has_before)
			m->before = 0;
		if (!m->has_after)
			m->after = 0;
		m->has_change = m->has_before && m->has_after &&
				guard_change(m->before, m->after, &m->change_pct);
	}
}

int
guard_before(struct exec_run *run, struct wh_conn *conn, size_t i,
	     const struct wh_param *params, size_t nparams, struct err *err)
{
	guard_prepare(run);
	return guard_measure(run, conn, i, params, nparams, false, err);
}

/* Record one built-in check's outcome. */
static struct exec_check_result *
guard_record(struct exec_run *run, size_t i, const char *name, bool passed,
	     const char *detail)
{
	struct exec_check_result *cr = &run->checks[run->nchecks++];

	cr->name = xstrdup(name);
	cr->detail = xstrdup(detail);
	cr->passed = passed;
	cr->part = i;
	return cr;
}

/* Metric k's trend check on part i: recorded; true when it fails the run
 * (a failure without severity: warn). */
static bool
guard_trend(struct exec_run *run, size_t i, size_t k, char *detail,
	    size_t dsize)
{
	const struct metric_def *md = &run->job->metrics[k];
	const struct exec_metric_result *m = &run->guards[i].metrics[k];
	const struct exec_trend_hist *h = run->trend ? &run->trend[k] : NULL;
	struct exec_check_result *cr;
	struct trend_result tr;
	char name[160];
	double *win;
	size_t n;

	snprintf(name, sizeof name, "trend:%s", md->name);
	if (h == NULL || h->error != NULL) {
		snprintf(detail, dsize, "the history could not be read: %s",
			 h != NULL ? h->error : "none given");
		cr = guard_record(run, i, name, false, detail);
		cr->warn = md->warn;
		cr->trend = true;
		return !md->warn;
	}
	win = xcalloc((size_t)md->trend.last + 1, sizeof *win);
	n = trend_window((const char *const *)h->keys, h->values, h->n,
			 run->parts[i].key, &md->trend, win);
	trend_judge(win, n, m->has_after, m->after, &md->trend, &tr);
	free(win);
	trend_detail(&tr, m->has_after, m->after, &md->trend, detail, dsize);
	cr = guard_record(run, i, name, trend_passed(tr.verdict), detail);
	cr->warn = md->warn;
	cr->trend = true;
	cr->has_target = m->has_after;
	cr->target = m->after;
	cr->history = (int64_t)tr.st.n;
	cr->mean = tr.st.mean;
	cr->sd = tr.st.sd;
	cr->has_sigma = tr.has_sigma;
	cr->sigma = tr.sigma;
	return severity_fails_run(cr->passed, cr->warn);
}

/* Part i's metric checks (max_change:NAME, trend:NAME) after rc of the
 * others: the outcome of all; err keeps the first failure when
 * first_error. */
static enum guard_outcome
guard_metrics(struct exec_run *run, size_t i, bool first_error,
	      enum guard_outcome rc, struct err *err)
{
	const struct job_def *j = run->job;
	const char *key = run->parts[i].key;
	struct exec_guard_result *g = &run->guards[i];
	char detail[ERR_MSG_MAX], name[160];

	for (size_t k = 0; k < j->nmetrics; k++) {
		const struct exec_metric_result *m = &g->metrics[k];
		char fb[32], fa[32];
		bool ok;

		if (!j->metrics[k].has_max_change)
			continue;
		snprintf(name, sizeof name, "max_change:%s", j->metrics[k].name);
		if (!m->has_change) {
			guard_record(run, i, name, true, "no value before to"
				     " compare with");
			continue;
		}
		ok = fabs(m->change_pct) <= j->metrics[k].max_change;
		snprintf(detail, sizeof detail, "%s moved %+.1f%% (%s -> %s),"
			 " %s %g%%", j->metrics[k].name, m->change_pct,
			 text_figure(m->before, fb, sizeof fb),
			 text_figure(m->after, fa, sizeof fa),
			 ok ? "within" : "above max_change",
			 j->metrics[k].max_change);
		guard_record(run, i, name, ok, detail)->warn = j->metrics[k].warn;
		if (severity_fails_run(ok, j->metrics[k].warn)) {
			if (rc == GUARD_PASSED && first_error)
				err_set(err, EXIT_WORK_FAILED, "check %s failed for"
					" %s: %s", name, key, detail);
			rc = GUARD_FAILED;
		}
	}
	/* a shard's figures are part of the partition's: its trends are
	 * judged once on the sums (guard_shard_trends) */
	for (size_t k = 0; run->shard_guards == NULL && k < j->nmetrics; k++) {
		if (!j->metrics[k].trend.has ||
		    !guard_trend(run, i, k, detail, sizeof detail))
			continue;
		if (rc == GUARD_PASSED && first_error)
			err_set(err, EXIT_WORK_FAILED, "check trend:%s failed for"
				" %s: %s", j->metrics[k].name, key, detail);
		rc = GUARD_FAILED;
	}
	return rc;
}

/* guard_after's checks, on the figures measured already. */
static enum guard_outcome
guard_judge(struct exec_run *run, struct wh_conn *conn, size_t i,
	    const struct wh_param *params, size_t nparams, bool first_error,
	    struct err *err)
{
	const struct job_def *j = run->job;
	const char *key = run->parts[i].key;
	struct exec_guard_result *g = &run->guards[i];
	char detail[ERR_MSG_MAX];
	struct err qerr;
	enum guard_outcome rc = GUARD_PASSED;

	if (j->nkey > 0) {
		char *sql = guard_sql_dupkey(j), *value = NULL;
		bool has_row;

		err_clear(&qerr);
		if (conn->drv->query_value(conn, sql, params, nparams, &has_row,
					   &value, &qerr) == -1) {
			free(sql);
			guard_record(run, i, "key_unique", false, qerr.msg);
			err_set(err, EXIT_WORK_FAILED, "check key_unique failed for"
				" %s: %s (is key: right for table %s?)", key,
				qerr.msg, j->table);
			return GUARD_BROKEN;
		}
		free(sql);
		if (has_row && value != NULL) {
			snprintf(detail, sizeof detail, "duplicate key %s", value);
			guard_record(run, i, "key_unique", false, detail);
			if (rc == GUARD_PASSED && first_error)
				err_set(err, EXIT_WORK_FAILED, "check key_unique"
					" failed for %s: %s", key, detail);
			rc = GUARD_FAILED;
		} else {
			guard_record(run, i, "key_unique", true, "no duplicate key");
		}
		free(value);
	}
	/* the guardrail (issue 40): a write that changed rows while the
	 * partition_column holds no row with the key, before or after it,
	 * wrote outside its declared partition: its guards and its
	 * fingerprint would read nothing */
	if (g->has_changes && g->has_rows_before && g->has_rows_after &&
	    cutoff_partition_missed(g->rows_before, g->rows_after,
				    g->changes)) {
		snprintf(detail, sizeof detail, "the write changed %lld row%s"
			 " but %s.%s holds no row with the partition's key %s:"
			 " partition_column must hold the key (:partition),"
			 " not e.g. :partition_start",
			 (long long)g->changes, g->changes == 1 ? "" : "s",
			 j->table, j->partition_column, key);
		guard_record(run, i, "partition_column", false, detail);
		if (rc == GUARD_PASSED && first_error)
			err_set(err, EXIT_WORK_FAILED, "check partition_column"
				" failed for %s: %s", key, detail);
		rc = GUARD_FAILED;
	}
	snprintf(detail, sizeof detail, "%lld row%s, at least %lld",
		 (long long)g->rows_after, g->rows_after == 1 ? "" : "s",
		 (long long)j->min_rows);
	if (g->rows_after < j->min_rows) {
		guard_record(run, i, "min_rows", false, detail);
		if (rc == GUARD_PASSED && first_error)
			err_set(err, EXIT_WORK_FAILED, "check min_rows failed for"
				" %s: %s", key, detail);
		rc = GUARD_FAILED;
	} else {
		guard_record(run, i, "min_rows", true, detail);
	}
	return guard_metrics(run, i, first_error, rc, err);
}

enum guard_outcome
guard_after(struct exec_run *run, struct wh_conn *conn, size_t i,
	    const struct wh_param *params, size_t nparams, bool first_error,
	    struct err *err)
{
	if (guard_measure(run, conn, i, params, nparams, true, err) < 0)
		return GUARD_BROKEN;
	return guard_judge(run, conn, i, params, nparams, first_error, err);
}

enum guard_outcome
guard_judge_in(struct exec_run *run, struct wh_conn *conn, size_t i,
	       const struct wh_param *params, size_t nparams, bool first_error,
	       const char *table, struct err *err)
{
	enum guard_outcome rc;

	guard_table_over = table;
	rc = guard_judge(run, conn, i, params, nparams, first_error, err);
	guard_table_over = NULL;
	return rc;
}

enum guard_outcome
guard_after_in(struct exec_run *run, struct wh_conn *conn, size_t i,
	       const struct wh_param *params, size_t nparams, bool first_error,
	       const char *table, struct err *err)
{
	enum guard_outcome rc;

	guard_table_over = table;
	rc = guard_after(run, conn, i, params, nparams, first_error, err);
	guard_table_over = NULL;
	return rc;
}

int
guard_before_in(struct exec_run *run, struct wh_conn *conn, size_t i,
		const struct wh_param *params, size_t nparams,
		const char *table, struct err *err)
{
	int rc;

	guard_table_over = table;
	rc = guard_before(run, conn, i, params, nparams, err);
	guard_table_over = NULL;
	return rc;
}
