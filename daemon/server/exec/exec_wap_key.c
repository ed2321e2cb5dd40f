/*
 * exec_wap_key.c - the check of a ClickHouse job's target (exec_wap.h):
 * its partition key against the job's grain, a Distributed table's local
 * table's key, at start, at reload (keycheck.c) and once per connection
 * by a run (docs/clickhouse.md, "The partition key").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "chparts.h"
#include "chsql.h"
#include "chwap.h"
#include "exec.h"
#include "exec_int.h"
#include "exec_wap.h"
#include "xalloc.h"

/* The shapes of the partition keys last found, by warehouse and table
 * (the key check runs before a connection's first run of a job, at start
 * and reload: exec_wap_key_audit reads what it found). */
#define EXEC_WAP_SHAPES_MAX 256
static struct {
	char wh[64], table[CHSQL_IDENT_MAX];
	enum chsql_key_shape shape; /* of the key, or of its first element */
	bool final;
	bool compound;              /* a tuple (chparts_first) */
} shapes[EXEC_WAP_SHAPES_MAX];
static size_t nshapes;
static pthread_mutex_t shapes_lock = PTHREAD_MUTEX_INITIALIZER;

static void
exec_wap_shape_set(const char *wh, const char *table,
		   enum chsql_key_shape shape, bool final, bool compound)
{
	size_t i;

	pthread_mutex_lock(&shapes_lock);
	for (i = 0; i < nshapes; i++)
		if (strcmp(shapes[i].wh, wh) == 0 &&
		    strcmp(shapes[i].table, table) == 0)
			break;
	if (i == nshapes && nshapes < EXEC_WAP_SHAPES_MAX) {
		snprintf(shapes[i].wh, sizeof shapes[i].wh, "%s", wh);
		snprintf(shapes[i].table, sizeof shapes[i].table, "%s", table);
		nshapes++;
	}
	if (i < nshapes) {
		shapes[i].shape = shape;
		shapes[i].final = final;
		shapes[i].compound = compound;
	}
	pthread_mutex_unlock(&shapes_lock);
}

static enum chsql_key_shape
exec_wap_shape_of(const char *wh, const char *table, bool *final,
		  bool *compound)
{
	enum chsql_key_shape shape = CHSQL_KEY_GRAIN;
	bool c = false;

	*final = false;
	pthread_mutex_lock(&shapes_lock);
	for (size_t i = 0; i < nshapes; i++)
		if (strcmp(shapes[i].wh, wh) == 0 &&
		    strcmp(shapes[i].table, table) == 0) {
			shape = shapes[i].shape;
			*final = shapes[i].final;
			c = shapes[i].compound;
		}
	pthread_mutex_unlock(&shapes_lock);
	if (compound != NULL)
		*compound = c;
	return shape;
}

bool
exec_wap_key_final(const struct exec_run *run)
{
	const struct job_def *jd = run->job;
	bool final;

	(void)exec_wap_shape_of(run->cfg->warehouses[jd->warehouse].name,
				jd->table, &final, NULL);
	return final;
}

bool
exec_wap_key_compound(const struct config *cfg, const struct job_def *jd)
{
	bool final, compound;

	if (jd->warehouse < 0)
		return false;
	(void)exec_wap_shape_of(cfg->warehouses[jd->warehouse].name,
				jd->table, &final, &compound);
	return compound;
}

/* The partition key of Distributed table jd->table's local table into
 * *key (*has_row), its name into out (when not NULL): 0, or -1 with err
 * (a batch job, no cluster, or a table not named plainly). */
static int
exec_wap_key_dist(struct wh_conn *conn, const struct warehouse_def *wh,
		  const struct job_def *jd, char **key, bool *has_row,
		  char *out, size_t outsz, struct err *err)
{
	char c[CHSQL_IDENT_MAX], db[CHSQL_IDENT_MAX], *sql;
	char local[CHSQL_IDENT_MAX] = "";
	int rc;

	/* one stage filled over the batch's interval on every shard is
	 * not done: refused before any run (start, reload,
	 * --check-config) rather than failing each */
	if (jd->batch)
		return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: job \"%s\":"
			       " batch: true on table %s, a Distributed"
			       " table, is not supported: remove batch"
			       " (each partition then runs on its own,"
			       " on every shard)", jd->file, jd->pos.line,
			       jd->pos.col, jd->name, jd->table);
	if (wh->cluster == NULL)
		return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: job \"%s\":"
			       " table %s is a Distributed table: name"
			       " its cluster on the warehouse (cluster:)"
			       " to publish on its shards", jd->file,
			       jd->pos.line, jd->pos.col, jd->name,
			       jd->table);
	sql = chsql_engine_sql(jd->table);
	rc = conn->drv->query_value(conn, sql, NULL, 0, has_row, key, err);
	free(sql);
	if (rc == -1)
		return -1;
	if (*key == NULL || chsql_distributed(*key, c, db, local,
					     sizeof local) < 0) {
		free(*key);
		return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: job"
			       " \"%s\": the Distributed table %s does"
			       " not name its cluster, database and"
			       " local table as plain names",
			       jd->file, jd->pos.line, jd->pos.col,
			       jd->name, jd->table);
	}
	free(*key);
	*key = NULL;
	if (out != NULL)
		snprintf(out, outsz, "%s", local);
	sql = chsql_table_key_sql(db, local);
	rc = conn->drv->query_value(conn, sql, NULL, 0, has_row, key, err);
	free(sql);
	if (rc == -1) {
		err_prefix(err, "reading the partition key of %s",
			   local);
		return -1;
	}
	return 0;
}

/* The target's partition key must make one of its partitions one of the
 * job's (chsql_key_matches); the table must exist.  A Distributed table
 * (*distributed set, NULL: not wanted) needs the warehouse's cluster:
 * (an INSERT into a stage created AS it would write the live shards) and
 * its local table's key is checked (on this server, one of the shards). */
/* The shape of partition key `key` for jd (*compound: a tuple whose
 * first element has that shape), or -1 with err saying what to do. */
static int
exec_wap_key_judge(const struct job_def *jd, const char *key,
		   enum chsql_key_shape *shape, bool *compound,
		   struct err *err)
{
	char first[256], want[300];

	*compound = chparts_first(key, first, sizeof first);
	*shape = chsql_key_shape(*compound ? first : key, jd->partition_column,
				 jd->grain, want, sizeof want);
	if (*shape != CHSQL_KEY_NONE)
		return 0;
	return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: job \"%s\": table %s is"
		       " partitioned by %s, which is not the job's %s grain:"
		       " partition it by %s%s, or by a tuple (%s, ...) whose"
		       " first element is that (a table is repartitioned by"
		       " CREATE TABLE new AS %s ENGINE = ... PARTITION BY ...,"
		       " INSERT INTO new SELECT * FROM %s, RENAME TABLE;"
		       " docs/clickhouse.md, \"The partition key\")",
		       jd->file, jd->pos.line, jd->pos.col, jd->name,
		       jd->table, key[0] ? key : "nothing",
		       grain_name(jd->grain), want, jd->grain > GRAIN_DAY ?
		       ", or by the column itself holding each partition's"
		       " first day" : "", want, jd->table, jd->table);
}

/* exec_wap_key_of, with the Distributed table's local table in local
 * (NULL: not wanted; "" for a table that is not Distributed). */
static int
exec_wap_key_local(struct wh_conn *conn, const struct config *cfg,
		   const struct job_def *jd, bool *distributed, char *out,
		   size_t outsz, struct err *err)
{
	const struct warehouse_def *wh = &cfg->warehouses[jd->warehouse];
	char *sql, *key = NULL, *sp;
	enum chsql_key_shape shape;
	bool has_row, final = false, compound;
	int rc;

	if (distributed != NULL)
		*distributed = false;
	if (out != NULL && outsz > 0)
		out[0] = '\0';
	/* names are plain (config.c, chsql_distributed) */
	sql = chsql_table_key_sql(NULL, jd->table);
	rc = conn->drv->query_value(conn, sql, NULL, 0, &has_row, &key, err);
	free(sql);
	if (rc == -1) {
		err_prefix(err, "reading the partition key of %s", jd->table);
		return -1;
	}
	if (key != NULL && strncmp(key, "Distributed ", 12) == 0) {
		free(key);
		key = NULL;
		if (distributed != NULL)
			*distributed = true;
		if (exec_wap_key_dist(conn, wh, jd, &key, &has_row, out, outsz,
				      err) == -1)
			return -1;
	}
	/* "ENGINE KEY": the key alone; a Replacing or Collapsing engine
	 * (Replicated too) read FINAL */
	if (key != NULL && (sp = strchr(key, ' ')) != NULL) {
		*sp = '\0';
		final = strstr(key, "Replacing") != NULL ||
			strstr(key, "Collapsing") != NULL;
		memmove(key, sp + 1, strlen(sp + 1) + 1);
	}
	if (!has_row || key == NULL) {
		free(key);
		return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: job \"%s\": table"
			       " %s does not exist in the warehouse's database",
			       jd->file, jd->pos.line, jd->pos.col, jd->name,
			       jd->table);
	}
	if (exec_wap_key_judge(jd, key, &shape, &compound, err) == -1) {
		free(key);
		return -1;
	}
	exec_wap_shape_set(wh->name, jd->table, shape, final, compound);
	free(key);
	return 0;
}

int
exec_wap_key_audit(struct wh_conn *conn, const struct exec_run *run,
		   const struct wh_param *params, size_t nparams,
		   const char *stage, struct err *err)
{
	const struct job_def *jd = run->job;
	const struct warehouse_def *wh = &run->cfg->warehouses[jd->warehouse];
	char sql[512], *drop, *v = NULL;
	bool has_row = false, final, compound;
	struct err e;
	int rc;

	if (exec_wap_shape_of(wh->name, jd->table, &final, &compound) !=
	    CHSQL_KEY_FIRST_DAY)
		return 0;
	if (chsql_first_day_sql(stage, jd->partition_column, jd->grain, sql,
				sizeof sql) == -1)
		return err_set(err, EXIT_WORK_FAILED, "auditing the stage of"
			       " %s: a name that is not plain", jd->table);
	if (conn->drv->query_value(conn, sql, params, nparams, &has_row, &v,
				   err) == -1) {
		err_prefix(err, "auditing the stage's %s",
			   jd->partition_column);
		return -1;
	}
	if (!has_row) {
		free(v);
		return 0;
	}
	err_set(err, EXIT_WORK_FAILED, "refused: the stage holds rows of %s"
		" whose %s is %s: table %s is partitioned by %s itself, which"
		" must hold each %s's first day (%s), or such rows land in"
		" partitions of their own that are never published; write"
		" %s(...) AS %s in the job's SELECT", params[0].value,
		jd->partition_column, v ? v : "NULL", jd->table,
		jd->partition_column, grain_name(jd->grain), params[0].value,
		chsql_grain_fn(jd->grain), jd->partition_column);
	/* the stray partitions (a plain Date text alone: chsql_plain; a
	 * compound key's, those whose first element it is) dropped, so that
	 * no stage rows are left behind; best effort, a year's days at most */
	for (int n = 0; n < 366 && has_row && v != NULL; n++) {
		const char *day = v;

		if (compound)
			rc = exec_wap_parts_drop(conn, stage, &day, 1, false,
						 &e);
		else if ((rc = chwap_drop_sql(stage, &day, 1, &drop, &e)) == 0) {
			rc = conn->drv->exec_script(conn, drop, NULL, 0, &e);
			free(drop);
		}
		free(v);
		v = NULL;
		if (rc == -1 || conn->drv->query_value(conn, sql, params,
						       nparams, &has_row, &v,
						       &e) == -1)
			break;
	}
	free(v);
	return -1;
}

int
exec_wap_key_of(struct wh_conn *conn, const struct config *cfg,
		const struct job_def *jd, bool *distributed, struct err *err)
{
	return exec_wap_key_local(conn, cfg, jd, distributed, NULL, 0, err);
}

int
exec_wap_key(struct wh_conn *conn, const struct config *cfg,
	     const struct job_def *jd, struct err *err)
{
	return exec_wap_key_of(conn, cfg, jd, NULL, err);
}

int
exec_check_partition_keys(const struct config *cfg, struct err *err)
{
	return exec_check_partition_keys_report(cfg, NULL, err);
}

void
exec_keycheck_free(struct exec_keycheck *kc, size_t njobs)
{
	for (size_t i = 0; kc->locals != NULL && i < njobs; i++)
		free(kc->locals[i]);
	free(kc->locals);
	free(kc->unchecked);
	memset(kc, 0, sizeof *kc);
}

/* kc->unchecked += "; warehouse "NAME": why" (why saying the warehouse
 * already when it starts with "warehouse ") */
static void
exec_keycheck_note(struct exec_keycheck *kc, const char *wh, const char *why)
{
	char *prev = kc->unchecked;

	if (strncmp(why, "warehouse ", 10) == 0)
		kc->unchecked = xasprintf("%s%s%s", prev ? prev : "",
					  prev ? "; " : "", why);
	else
		kc->unchecked = xasprintf("%s%swarehouse \"%s\": %s",
					  prev ? prev : "", prev ? "; " : "",
					  wh, why);
	free(prev);
}

int
exec_check_partition_keys_report(const struct config *cfg,
				 struct exec_keycheck *kc, struct err *err)
{
	const struct wh_driver *drv;
	const char *why = NULL;
	struct wh_conn **conns;
	bool *tried, any = false;
	int rc = 0;

	if (kc != NULL) {
		memset(kc, 0, sizeof *kc);
		kc->locals = xcalloc(cfg->njobs + 1, sizeof *kc->locals);
	}
	for (size_t w = 0; w < cfg->nwarehouses; w++)
		any |= cfg->warehouses[w].kind == WH_CLICKHOUSE;
	/* no module loaded for a configuration without ClickHouse */
	if (!any)
		return 0;
	if ((drv = exec_driver_for(WH_CLICKHOUSE, &why)) == NULL) {
		for (size_t w = 0; kc != NULL && w < cfg->nwarehouses; w++)
			if (cfg->warehouses[w].kind == WH_CLICKHOUSE)
				exec_keycheck_note(kc, cfg->warehouses[w].name,
						   why);
		return 0;
	}
	conns = xcalloc(cfg->nwarehouses + 1, sizeof *conns);
	tried = xcalloc(cfg->nwarehouses + 1, sizeof *tried);
	for (size_t i = 0; i < cfg->njobs && rc == 0; i++) {
		/* its jobs' `distributed` learnt here, before the
		 * configuration is shared (at start; a reload's checked
		 * before it is used) */
		struct job_def *jd = &cfg->jobs[i];
		int w = jd->warehouse;
		char local[CHSQL_IDENT_MAX];
		struct err e;

		if (w < 0 || cfg->warehouses[w].kind != WH_CLICKHOUSE)
			continue;
		if (!tried[w]) {
			tried[w] = true;
			/* unreachable now: its runs say so when they run */
			if (drv->open(&cfg->warehouses[w], &conns[w], &e) == -1) {
				conns[w] = NULL;
				if (kc != NULL)
					exec_keycheck_note(kc,
					    cfg->warehouses[w].name, e.msg);
			} else if (drv->watch != NULL) /* each query bounded */
				drv->watch(conns[w], NULL, 10000, false);
		}
		if (conns[w] == NULL)
			continue;
		err_clear(&e);
		local[0] = '\0';
		if (exec_wap_key_local(conns[w], cfg, jd, &jd->distributed,
				       local, sizeof local, &e) == -1 &&
		    e.code == EXIT_BAD_INPUT) {
			*err = e;
			rc = -1;
		} else if (kc != NULL && e.msg[0] != '\0') {
			char why2[ERR_MSG_MAX + 64];

			snprintf(why2, sizeof why2, "job %s: %s", jd->name,
				 e.msg);
			exec_keycheck_note(kc, cfg->warehouses[w].name, why2);
		} else if (kc != NULL) {
			kc->nchecked++;
			if (local[0] != '\0')
				kc->locals[i] = xstrdup(local);
		}
	}
	for (size_t w = 0; w < cfg->nwarehouses; w++)
		if (conns[w] != NULL)
			drv->close(conns[w]);
	free(conns);
	free(tried);
	return rc;
}
