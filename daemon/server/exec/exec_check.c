/*
 * exec_check.c - a SQL run's checks and reconciles (worker threads).
 *
 * A check is a query of the run's own transaction whose value passes or
 * fails; every outcome is recorded for the audit.  A reconcile compares
 * a target query (in the transaction, after the write) with a source
 * query on another warehouse, read before the transaction on this
 * worker's connection to it, under a timeout of its own (a watchdog
 * thread that interrupts the connection).  severity.h decides which
 * failures fail the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock_ms.h"
#include "exec_priv.h"
#include "reconcile.h"
#include "severity.h"
#include "xalloc.h"

/* Truthiness of a check's value: NULL, "", 0 (any numeric spelling),
 * "false" and "f" (PostgreSQL's boolean text) fail; anything else passes. */
static bool
exec_value_true(const char *v)
{
	const char *p;
	char *end;
	double d;

	if (v == NULL)
		return false;
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v == '\0' || strcasecmp(v, "false") == 0 ||
	    strcasecmp(v, "f") == 0)
		return false;
	d = strtod(v, &end);
	if (end != v) {
		for (p = end; *p == ' ' || *p == '\t'; p++)
			;
		if (*p == '\0')
			return d != 0;
	}
	return true;
}

/*
 * Run every check of the job for part i, recording each outcome.  A check
 * that returns a failing value fails the run (the first one names the
 * error) unless its severity is warn, but the others still run, for the audit; a check that cannot run
 * (SQL error, interrupt) stops there.  Returns 0 when all passed, -1 when
 * one failed, -2 when one could not run.
 */
int
exec_checks(struct exec_flight *fl, struct wh_conn *conn, size_t i,
	    const struct wh_param *params, size_t nparams, struct err *err)
{
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	const char *key = run->parts[i].key;
	struct exec_check_result *cr;
	char detail[ERR_MSG_MAX];
	struct err qerr;
	bool has_row;
	char *value;
	int rc = 0;
	size_t k;

	for (k = 0; k < jd->nchecks; k++) {
		if (exec_interrupted(fl, err))
			return -2;
		err_clear(&qerr);
		cr = &run->checks[run->nchecks++];
		cr->name = xstrdup(jd->checks[k].name);
		cr->warn = jd->checks[k].warn;
		cr->part = i;
		if (conn->drv->query_value(conn, jd->checks[k].sql, params,
		    nparams, &has_row, &value, &qerr) == -1) {
			cr->passed = false;
			cr->detail = xstrdup(qerr.msg);
			if (rc == 0)
				err_set(err, EXIT_WORK_FAILED,
				    "check %s failed for %s: %s",
				    jd->checks[k].name, key, qerr.msg);
			return -2;
		}
		cr->passed = has_row && exec_value_true(value);
		if (!has_row)
			snprintf(detail, sizeof detail, "returned no row");
		else if (value == NULL)
			snprintf(detail, sizeof detail, "returned NULL");
		else
			snprintf(detail, sizeof detail, "returned %.64s%s",
			    value, strlen(value) > 64 ? "..." : "");
		free(value);
		cr->detail = xstrdup(detail);
		if (severity_fails_run(cr->passed, cr->warn) && rc == 0) {
			err_set(err, EXIT_WORK_FAILED, "check %s failed for %s "
			    "(%s)", jd->checks[k].name, key, detail);
			rc = -1;
		}
	}
	return rc;
}

/* A source query's own timeout: a thread that interrupts conn once ms
 * have passed, unless told it is done first. */
struct exec_watchdog {
	uv_mutex_t lock;
	uv_cond_t cond;
	bool done, fired;
	struct wh_conn *conn;
	int64_t ms;
};

static void
exec_watchdog_main(void *arg)
{
	struct exec_watchdog *wd = arg;
	int64_t deadline = clock_ms(CLOCK_MONOTONIC) + wd->ms, left;

	uv_mutex_lock(&wd->lock);
	while (!wd->done) {
		left = deadline - clock_ms(CLOCK_MONOTONIC);
		if (left <= 0) {
			wd->fired = true;
			wd->conn->drv->interrupt(wd->conn);
			break;
		}
		(void)uv_cond_timedwait(&wd->cond, &wd->lock,
		    (uint64_t)left * 1000000u);
	}
	uv_mutex_unlock(&wd->lock);
}

/*
 * Before the run's transaction: every reconcile's source query for every
 * part, on its own warehouse (this worker's connection to it), with its
 * own timeout; the job's timeout and cancel interrupt it too.  A source
 * that cannot be reached or answers with an error is recorded as such:
 * its check fails after the write.
 */
void
exec_recon_sources(struct exec_worker *w, struct exec_flight *fl)
{
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	struct wh_param params[EXEC_NPARAMS];
	struct exec_watchdog wd;
	uv_thread_t tid;
	size_t n = jd->nreconciles;

	fl->recon = xcalloc(n * run->nparts + 1, sizeof *fl->recon);
	for (size_t i = 0; i < run->nparts; i++) {
		exec_part_params(&run->parts[i], params);
		for (size_t k = 0; k < n; k++) {
			const struct reconcile_def *rd = &jd->reconciles[k];
			const struct warehouse_def *wh =
			    &run->cfg->warehouses[rd->source_wh];
			struct exec_recon_src *rs = &fl->recon[i * n + k];
			struct wh_conn *conn;
			struct err qerr;
			char *value = NULL;
			bool has_row, bad = false;
			int rc;

			err_clear(&qerr);
			if (exec_interrupted(fl, &qerr) ||
			    (conn = exec_conn_get(w, wh, &qerr)) == NULL) {
				snprintf(rs->err, sizeof rs->err, "%s", qerr.msg);
				continue;
			}
			uv_mutex_lock(&w->lock);
			w->conn = conn;
			uv_mutex_unlock(&w->lock);
			if (conn->drv->watch != NULL)
				conn->drv->watch(conn, &fl->stop,
				    rd->source_timeout * 1000, false);
			memset(&wd, 0, sizeof wd);
			wd.conn = conn;
			wd.ms = rd->source_timeout * 1000;
			if (uv_mutex_init(&wd.lock) != 0 ||
			    uv_cond_init(&wd.cond) != 0 ||
			    uv_thread_create(&tid, exec_watchdog_main, &wd) != 0)
				abort();
			rc = conn->drv->query_value(conn, rd->source_sql,
			    params, EXEC_NPARAMS, &has_row, &value, &qerr);
			uv_mutex_lock(&wd.lock);
			wd.done = true;
			uv_cond_signal(&wd.cond);
			uv_mutex_unlock(&wd.lock);
			uv_thread_join(&tid);
			uv_cond_destroy(&wd.cond);
			uv_mutex_destroy(&wd.lock);
			if (conn->drv->watch != NULL)
				conn->drv->watch(conn, NULL, 0, false);
			uv_mutex_lock(&w->lock);
			w->conn = NULL;
			uv_mutex_unlock(&w->lock);
			if (rc == 0 && reconcile_number(has_row ? value : NULL,
			    &rs->has, &rs->v) < 0)
				bad = true;
			if (rc == -1)
				snprintf(rs->err, sizeof rs->err, "%s%s",
				    wd.fired ? "timed out: " : "", qerr.msg);
			else if (bad)
				snprintf(rs->err, sizeof rs->err, "returned %.64s,"
				    " not a number", value);
			else
				rs->ok = true;
			free(value);
			/* interrupted until its next begin(): not for reuse */
			if (wd.fired || !conn->drv->usable(conn))
				exec_conn_drop(w, conn);
		}
	}
}

/*
 * After part i's write, in the run's transaction: every reconcile's target
 * query, compared with its source value.  Returns 0 when all passed (or
 * only warned), -1 when one failed, -2 when a target query could not run.
 */
int
exec_reconciles(struct exec_flight *fl, struct wh_conn *conn, size_t i,
		const struct wh_param *params, size_t nparams, struct err *err)
{
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	const char *key = run->parts[i].key;
	char detail[ERR_MSG_MAX], name[160], tol[64];
	int rc = 0;

	for (size_t k = 0; k < jd->nreconciles; k++) {
		const struct reconcile_def *rd = &jd->reconciles[k];
		const struct exec_recon_src *rs =
		    &fl->recon[i * jd->nreconciles + k];
		struct exec_check_result *cr = &run->checks[run->nchecks++];
		struct err qerr;
		char *value = NULL;
		bool has_row;

		snprintf(name, sizeof name, "reconcile:%s", rd->name);
		reconcile_tolerance_format(&rd->tolerance, tol, sizeof tol);
		cr->name = xstrdup(name);
		cr->part = i;
		cr->warn = rd->warn;
		cr->recon = true;
		err_clear(&qerr);
		if (exec_interrupted(fl, err) ||
		    conn->drv->query_value(conn, rd->target_sql, params, nparams,
		    &has_row, &value, &qerr) == -1) {
			cr->detail = xstrdup(qerr.msg);
			if (rc == 0 && err != NULL && qerr.msg[0])
				err_set(err, EXIT_WORK_FAILED, "check %s failed"
				    " for %s: target: %s", name, key, qerr.msg);
			return -2;
		}
		if (reconcile_number(has_row ? value : NULL, &cr->has_target,
		    &cr->target) < 0) {
			snprintf(detail, sizeof detail, "target returned %.64s,"
			    " not a number", value);
			cr->passed = false;
		} else if (!rs->ok) {
			snprintf(detail, sizeof detail, "source %s: %s",
			    run->cfg->warehouses[rd->source_wh].name, rs->err);
			cr->passed = false;
		} else {
			cr->has_source = rs->has;
			cr->source = rs->v;
			cr->passed = reconcile_within(rs->has, rs->v,
			    cr->has_target, cr->target, &rd->tolerance,
			    &cr->diff);
			reconcile_detail(rs->has, rs->v, cr->has_target,
			    cr->target, cr->diff, cr->passed, tol, detail,
			    sizeof detail);
		}
		free(value);
		cr->detail = xstrdup(detail);
		if (severity_fails_run(cr->passed, cr->warn) && rc == 0) {
			if (err != NULL)
				err_set(err, EXIT_WORK_FAILED, "check %s failed"
				    " for %s (%s)", name, key, detail);
			rc = -1;
		}
	}
	return rc;
}
