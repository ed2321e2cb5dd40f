/*
 * exec_wap_key.c - the check of a ClickHouse job's target (exec_wap.h):
 * its partition key against the job's grain, a Distributed table's local
 * table's key, at start, at reload (keycheck.c) and once per connection
 * by a run (docs/clickhouse.md, "The partition key").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "chsql.h"
#include "exec.h"
#include "exec_int.h"
#include "exec_wap.h"
#include "xalloc.h"

/* The target's partition key must make one of its partitions one of the
 * job's (chsql_key_matches); the table must exist.  A Distributed table
 * (*distributed set, NULL: not wanted) needs the warehouse's cluster:
 * (an INSERT into a stage created AS it would write the live shards) and
 * its local table's key is checked (on this server, one of the shards). */
int
exec_wap_key_of(struct wh_conn *conn, const struct config *cfg,
		const struct job_def *jd, bool *distributed, struct err *err)
{
	const struct warehouse_def *wh = &cfg->warehouses[jd->warehouse];
	char sql[512], want[300], c[CHSQL_IDENT_MAX], db[CHSQL_IDENT_MAX];
	char local[CHSQL_IDENT_MAX], *key = NULL, *sp;
	bool has_row;

	if (distributed != NULL)
		*distributed = false;
	/* names are plain (config.c, chsql_distributed) */
	snprintf(sql, sizeof sql, "SELECT concat(engine, ' ', partition_key)"
		 " FROM system.tables WHERE database = currentDatabase() AND"
		 " name = '%s'", jd->table);
	if (conn->drv->query_value(conn, sql, NULL, 0, &has_row, &key,
				   err) == -1) {
		err_prefix(err, "reading the partition key of %s", jd->table);
		return -1;
	}
	if (key != NULL && strncmp(key, "Distributed ", 12) == 0) {
		free(key);
		key = NULL;
		if (distributed != NULL)
			*distributed = true;
		if (wh->cluster == NULL)
			return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: job \"%s\":"
				       " table %s is a Distributed table: name"
				       " its cluster on the warehouse (cluster:)"
				       " to publish on its shards", jd->file,
				       jd->pos.line, jd->pos.col, jd->name,
				       jd->table);
		snprintf(sql, sizeof sql, "SELECT engine_full FROM"
			 " system.tables WHERE database = currentDatabase() AND"
			 " name = '%s'", jd->table);
		if (conn->drv->query_value(conn, sql, NULL, 0, &has_row, &key,
					   err) == -1)
			return -1;
		if (key == NULL || chsql_distributed(key, c, db, local,
						     sizeof local) < 0) {
			free(key);
			return err_set(err, EXIT_BAD_INPUT, "%s:%d:%d: job"
				       " \"%s\": the Distributed table %s does"
				       " not name its cluster, database and"
				       " local table as plain names",
				       jd->file, jd->pos.line, jd->pos.col,
				       jd->name, jd->table);
		}
		free(key);
		key = NULL;
		snprintf(sql, sizeof sql, "SELECT concat(engine, ' ',"
			 " partition_key) FROM system.tables WHERE database ="
			 " '%s' AND name = '%s'", db, local);
		if (conn->drv->query_value(conn, sql, NULL, 0, &has_row, &key,
					   err) == -1) {
			err_prefix(err, "reading the partition key of %s",
				   local);
			return -1;
		}
	}
	/* "ENGINE KEY": the key alone */
	if (key != NULL && (sp = strchr(key, ' ')) != NULL)
		memmove(key, sp + 1, strlen(sp + 1) + 1);
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
exec_wap_key(struct wh_conn *conn, const struct config *cfg,
	     const struct job_def *jd, struct err *err)
{
	return exec_wap_key_of(conn, cfg, jd, NULL, err);
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
		if (exec_wap_key(conns[w], cfg, jd, &e) == -1 &&
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
