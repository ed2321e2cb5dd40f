/*
 * exec_wap.c - write-audit-publish on ClickHouse (docs/clickhouse.md):
 * the runs of a job on a ClickHouse warehouse, their --verify proof, and
 * the start's check of the targets' partition keys.  Called by exec.c's
 * worker threads (exec_int.h); there is no transaction: a stage table is
 * filled, audited, then swapped in by one REPLACE PARTITION.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chsql.h"
#include "exec.h"
#include "exec_int.h"
#include "guard.h"
#include "wh.h"
#include "xalloc.h"

/* ---- write-audit-publish (ClickHouse; docs/clickhouse.md) ----------- */

/* The target's partition key must make one of its partitions one of the
 * job's (chsql_key_matches); the table must exist. */
static int
exec_wap_key(struct wh_conn *conn, const struct job_def *jd, struct err *err)
{
	char sql[256], want[300];
	bool has_row;
	char *key = NULL;

	snprintf(sql, sizeof sql, "SELECT partition_key FROM system.tables"
		 " WHERE database = currentDatabase() AND name = '%s'",
		 jd->table); /* a plain name (config.c) */
	if (conn->drv->query_value(conn, sql, NULL, 0, &has_row, &key,
				   err) == -1) {
		err_prefix(err, "reading the partition key of %s", jd->table);
		return -1;
	}
	if (!has_row || key == NULL) {
		free(key);
		return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: job \"%s\": table"
			       " %s does not exist in the warehouse's database",
			       jd->file, jd->pos.line, jd->pos.col, jd->name,
			       jd->table);
	}
	if (!chsql_key_matches(key, jd->partition_column, jd->grain, want,
			       sizeof want)) {
		err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: job \"%s\": table %s is"
			" partitioned by %s, which is not the job's %s grain:"
			" partition it by %s", jd->file, jd->pos.line,
			jd->pos.col, jd->name, jd->table, key[0] ? key :
			"nothing", grain_name(jd->grain), want);
		free(key);
		return -1;
	}
	free(key);
	return 0;
}

int
exec_check_partition_keys(const struct config *cfg, struct err *err)
{
	const struct wh_driver *drv;
	struct wh_conn **conns;
	bool *tried, any = false;
	int rc = 0;

	for (size_t w = 0; w < cfg->nwarehouses; w++)
		any |= cfg->warehouses[w].kind == WH_CLICKHOUSE;
	/* no module loaded for a configuration without ClickHouse */
	if (!any || (drv = exec_driver(WH_CLICKHOUSE)) == NULL)
		return 0;
	conns = xcalloc(cfg->nwarehouses + 1, sizeof *conns);
	tried = xcalloc(cfg->nwarehouses + 1, sizeof *tried);
	for (size_t i = 0; i < cfg->njobs && rc == 0; i++) {
		const struct job_def *jd = &cfg->jobs[i];
		int w = jd->warehouse;
		struct err e;

		if (w < 0 || cfg->warehouses[w].kind != WH_CLICKHOUSE)
			continue;
		if (!tried[w]) {
			tried[w] = true;
			/* unreachable now: its runs say so when they run */
			if (drv->open(&cfg->warehouses[w], &conns[w], &e) == -1)
				conns[w] = NULL;
			else if (drv->watch != NULL) /* each query bounded */
				drv->watch(conns[w], NULL, 10000, false);
		}
		if (conns[w] == NULL)
			continue;
		err_clear(&e);
		if (exec_wap_key(conns[w], jd, &e) == -1 &&
		    e.code == EXIT_BAD_INPUT) {
			*err = e;
			rc = -1;
		}
	}
	for (size_t w = 0; w < cfg->nwarehouses; w++)
		if (conns[w] != NULL)
			drv->close(conns[w]);
	free(conns);
	free(tried);
	return rc;
}

/* One statement of the sequence, naming the step when it fails. */
static int
exec_wap_step(struct exec_flight *fl, struct wh_conn *conn, const char *what,
	      const char *sql, const struct wh_param *params, size_t nparams,
	      struct err *err)
{
	if (exec_interrupted(fl, err))
		return -1;
	if (conn->drv->exec_script(conn, sql, params, nparams, err) == -1) {
		if (strcmp(err->msg, "interrupted") != 0)
			err_prefix(err, "%s", what);
		return -1;
	}
	return 0;
}

/* Drop part's stage partition: after its publish, or after a failure
 * (so that no stage rows are left behind); best effort, not once the run
 * is being stopped (the next run of the partition clears it first). */
static void
exec_wap_unstage(struct exec_flight *fl, struct wh_conn *conn,
		 const char *stage, const struct wh_param *params)
{
	struct err e;
	char *sql;

	if (exec_stopping(fl))
		return;
	sql = xasprintf("ALTER TABLE `%s` DROP PARTITION :partition",
			     stage);
	(void)conn->drv->exec_script(conn, sql, params, 1, &e);
	free(sql);
}

static int exec_wap_audit(struct exec_flight *fl, struct wh_conn *conn,
			  size_t i, const struct wh_param *params,
			  const char *stage, struct err *err);

/* Steps 3 to 7 of docs/clickhouse.md for part i: clear the stage
 * partition, fill it, audit it, refuse it empty, publish it. */
static int
exec_wap_part(struct exec_flight *fl, struct wh_conn *conn, size_t i,
	      const struct wh_param *params, const char *stage,
	      struct err *err)
{
	const struct job_def *jd = exec_flight_run(fl)->job;
	char *sql;
	int rc;

	sql = xasprintf("ALTER TABLE `%s` DROP PARTITION :partition",
			     stage);
	rc = exec_wap_step(fl, conn, "clearing the stage partition", sql,
			   params, 1, err);
	free(sql);
	if (rc == -1)
		return -1;
	sql = xasprintf("INSERT INTO `%s` %s", stage, jd->sql);
	rc = exec_wap_step(fl, conn, "filling the stage", sql, params, 4, err);
	free(sql);
	if (rc == -1)
		return -1;
	if (exec_wap_audit(fl, conn, i, params, stage, err) == -1)
		return -1;
	sql = xasprintf("ALTER TABLE `%s` REPLACE PARTITION :partition"
			     " FROM `%s`", jd->table, stage);
	rc = exec_wap_step(fl, conn, "publishing", sql, params, 1, err);
	free(sql);
	return rc;
}

/* Part i's audit in the stage: checks, guardrails, the empty refusal. */
static int
exec_wap_audit(struct exec_flight *fl, struct wh_conn *conn, size_t i,
	       const struct wh_param *params, const char *stage,
	       struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);

	if (exec_checks(fl, conn, i, params, 4, err) != 0)
		return -1;
	if (guard_after_in(run, conn, i, params, 3, true, stage, err) !=
	    GUARD_PASSED)
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
		struct wh_param params[4])
{
	exec_part_params(&run->parts[i], params);
	params[3].name = "stage";
	params[3].value = stage;
}

/* A batch on ClickHouse: every stage partition cleared, one fill for the
 * batch's interval, every partition audited, then each published. */
static int
exec_wap_batch(struct exec_flight *fl, struct wh_conn *conn, const char *stage,
	       struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	struct wh_param params[4], span[3];
	const char *lo = run->parts[0].start, *hi = run->parts[0].end;
	int64_t published = 0;
	char *sql;
	size_t i;
	int rc = 0;

	for (i = 0; i < run->nparts && rc == 0; i++) {
		exec_wap_params(run, i, stage, params);
		if (strcmp(run->parts[i].start, lo) < 0)
			lo = run->parts[i].start;
		if (strcmp(run->parts[i].end, hi) > 0)
			hi = run->parts[i].end;
		if (exec_interrupted(fl, err) ||
		    guard_before(run, conn, i, params, 3, err) == -1)
			return -1;
		sql = xasprintf("ALTER TABLE `%s` DROP PARTITION :partition",
				     stage);
		rc = exec_wap_step(fl, conn, "clearing the stage partition", sql,
				   params, 1, err);
		free(sql);
	}
	/* the whole batch's interval; :partition is deliberately not bound */
	span[0].name = "partition_start";
	span[0].value = lo;
	span[1].name = "partition_end";
	span[1].value = hi;
	span[2].name = "stage";
	span[2].value = stage;
	if (rc == 0) {
		sql = xasprintf("INSERT INTO `%s` %s", stage, run->job->sql);
		rc = exec_wap_step(fl, conn, "filling the stage", sql, span, 3,
				   err);
		free(sql);
	}
	for (i = 0; i < run->nparts && rc == 0; i++) {
		exec_wap_params(run, i, stage, params);
		rc = exec_wap_audit(fl, conn, i, params, stage, err);
	}
	for (i = 0; i < run->nparts && rc == 0; i++) {
		exec_wap_params(run, i, stage, params);
		sql = xasprintf("ALTER TABLE `%s` REPLACE PARTITION"
				     " :partition FROM `%s`", run->job->table,
				     stage);
		rc = exec_wap_step(fl, conn, "publishing", sql, params, 1, err);
		free(sql);
		if (rc == 0)
			published += run->guards[i].rows_after;
	}
	for (i = 0; i < run->nparts; i++) {
		exec_wap_params(run, i, stage, params);
		exec_wap_unstage(fl, conn, stage, params);
	}
	run->rows_changed = published;
	return rc;
}

/*
 * A run on ClickHouse: for each partition, the stage partition cleared,
 * filled by INSERT INTO stage + the job's SELECT, audited there (checks
 * with :stage, guardrails before from the live table and after from the
 * stage, an empty stage refused unless allow_empty), then published by
 * one REPLACE PARTITION and the stage partition dropped.  Nothing is
 * published for a partition whose step or check failed.
 */
int
exec_sql_wap(struct exec_flight *fl, struct wh_conn *conn, struct err *err)
{
	struct exec_run *run = exec_flight_run(fl);
	const struct job_def *jd = run->job;
	char stage[CHSQL_IDENT_MAX + 32], *sql;
	struct wh_param params[4];
	int64_t published = 0;
	int rc = 0;

	chsql_stage_name(jd->table, stage, sizeof stage);
	if (exec_begin(conn, err) == -1 || exec_wap_key(conn, jd, err) == -1)
		return -1;
	sql = xasprintf("CREATE TABLE IF NOT EXISTS `%s` AS `%s`", stage,
			     jd->table);
	rc = exec_wap_step(fl, conn, "creating the stage table", sql, NULL, 0,
			   err);
	free(sql);
	if (rc == -1)
		return -1;
	run->checks = xcalloc((jd->nchecks + 2 + jd->nmetrics) *
				   run->nparts, sizeof *run->checks);
	if (jd->batch)
		return exec_wap_batch(fl, conn, stage, err);
	for (size_t i = 0; i < run->nparts; i++) {
		exec_part_params(&run->parts[i], params);
		params[3].name = "stage";
		params[3].value = stage;
		if (exec_interrupted(fl, err) ||
		    guard_before(run, conn, i, params, 3, err) == -1)
			return -1;
		if (exec_wap_part(fl, conn, i, params, stage, err) == -1) {
			exec_wap_unstage(fl, conn, stage, params);
			return -1;
		}
		published += run->guards[i].rows_after;
		exec_wap_unstage(fl, conn, stage, params);
	}
	run->rows_changed = published;
	return 0;
}

/* A partition's rows and order-independent checksum (the sum, modulo
 * 2^64, of a 64-bit hash of each row) in `table`. */
static int
exec_wap_digest(struct wh_conn *conn, const char *table, const char *column,
		const struct wh_param *params, int64_t *rows, char *sum,
		size_t sumsz, struct err *err)
{
	char *sql, *v = NULL, *end;
	bool has_row;
	int rc;

	sql = xasprintf("SELECT toString(count()) || ' ' ||"
			     " toString(sum(cityHash64(*))) FROM `%s` WHERE `%s`"
			     " = :partition", table, column);
	rc = conn->drv->query_value(conn, sql, params, 1, &has_row, &v, err);
	free(sql);
	if (rc == -1)
		return -1;
	if (!has_row || v == NULL || (*rows = strtoll(v, &end, 10), *end != ' ')) {
		free(v);
		return err_set(err, EXIT_WORK_FAILED, "reading partition %s of %s:"
			       " no count", params[0].value, table);
	}
	snprintf(sum, sumsz, "%s", end + 1);
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
	char stage[CHSQL_IDENT_MAX + 32], *sql;
	struct wh_param params[4];
	int rc = 0;

	chsql_stage_name(jd->table, stage, sizeof stage);
	exec_part_params(&run->parts[0], params);
	params[3].name = "stage";
	params[3].value = stage;
	if (exec_begin(conn, err) == -1 || exec_wap_key(conn, jd, err) == -1)
		return -1;
	sql = xasprintf("CREATE TABLE IF NOT EXISTS `%s` AS `%s`", stage,
			     jd->table);
	rc = exec_wap_step(fl, conn, "creating the stage table", sql, NULL, 0,
			   err);
	free(sql);
	if (rc == -1 || exec_wap_digest(conn, jd->table, jd->partition_column,
	    params, &run->verify_rows[0], run->verify_sum[0],
	    sizeof run->verify_sum[0], err) == -1)
		return -1;
	for (int k = 1; k < 3 && rc == 0; k++) {
		sql = xasprintf("ALTER TABLE `%s` DROP PARTITION :partition",
				     stage);
		rc = exec_wap_step(fl, conn, "clearing the stage partition", sql,
				   params, 1, err);
		free(sql);
		if (rc == 0) {
			sql = xasprintf("INSERT INTO `%s` %s", stage, jd->sql);
			rc = exec_wap_step(fl, conn, "filling the stage", sql,
					   params, 4, err);
			free(sql);
		}
		if (rc == 0)
			rc = exec_wap_digest(conn, stage, jd->partition_column,
			    params, &run->verify_rows[k], run->verify_sum[k],
			    sizeof run->verify_sum[k], err);
		if (rc == -1)
			err_prefix(err, "run %d of 2", k);
	}
	exec_wap_unstage(fl, conn, stage, params);
	return rc;
}

