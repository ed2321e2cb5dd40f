/*
 * config_sql.c - the scan of a job's SQL once its keys are read
 * (sqlscan.h): no read of the wall clock unless allow_wall_clock, no
 * statement that controls the run's transaction; each refusal points at the
 * offending byte of the file (or of its sql_file).
 */
#include "config_int.h"

#include <stdio.h>
#include <string.h>

#include "sqlscan.h"

/* The SQL dialect of warehouse index wh (-1: none, SQLite's). */
static enum sqlscan_dialect
cfg_dialect(const struct config *cfg, int wh)
{
	if (wh >= 0 && cfg->warehouses[wh].kind == WH_POSTGRES)
		return SQLSCAN_PG;
	if (wh >= 0 && cfg->warehouses[wh].kind == WH_CLICKHOUSE)
		return SQLSCAN_CH;
	return SQLSCAN_SQLITE;
}

enum sqlscan_dialect
config_job_dialect(const struct config *cfg, const struct job_def *j)
{
	return cfg_dialect(cfg, j->warehouse);
}

/* The first read of the wall clock in a job's SQL (sqlscan.h), in the
 * dialect of its warehouse: the byte offset, or -1. */
static long
cfg_wall_clock(const struct config *cfg, const struct job_def *j,
	       const char *sql, const char **what)
{
	return sqlscan_wall_clock(sql, cfg_dialect(cfg, j->warehouse), what);
}

/* Refuse SQL that reads the wall clock, unless allow_wall_clock.  `what`
 * names the SQL after the job (" check \"c\"", " reconcile \"r\" source"
 * or "" for the job's own); wh is the warehouse it runs on (its dialect). */
static int
cfg_no_wall_clock(struct cfg_parser *p, const struct job_def *j,
		  const yaml_node_t *sqlnode, const char *sql,
		  const char *what_sql, int wh)
{
	const char *what = NULL;
	long off;
	int line, col;

	if (j->allow_wall_clock ||
	    (off = sqlscan_wall_clock(sql, cfg_dialect(p->cfg, wh), &what)) < 0)
		return 0;
	cfg_scalar_pos(p, sqlnode, (size_t)off, &line, &col);
	return cfg_fail_at(p, line, col,
			   "job \"%s\"%s reads the wall clock (%s): take the date from :partition, or set allow_wall_clock: true",
			   j->name, what_sql, what);
}

static int cfg_no_txn(struct cfg_parser *p, const struct job_def *j,
		      const yaml_node_t *n, const char *sql, const char *what,
		      const yaml_node_t *key, const char *file, int flags,
		      int wh);

/* A job's reconcile SQL, scanned as its own: the source in the dialect of
 * its warehouse, the target in the job's; the wall clock (txn false) or
 * transaction control (txn true).  The source runs outside the run's
 * transaction, but a source that commits or reads the clock is as wrong. */
static int
cfg_recon_scan(struct cfg_parser *p, const struct job_def *j,
	       yaml_node_t *map, bool txn)
{
	yaml_node_t *seq = cfg_map_get(p, map, "reconcile"), *it, *src;
	char what[CFG_QUOTE_MAX * 4 + 48], buf[CFG_QUOTE_MAX * 4 + 16];

	for (size_t i = 0; seq != NULL && i < j->nreconciles; i++) {
		const struct reconcile_def *r = &j->reconciles[i];

		it = cfg_seq_item(p, seq, i);
		src = cfg_map_get(p, it, "source");
		cfg_quote(r->name, buf, sizeof buf);
		snprintf(what, sizeof what, " reconcile %s source", buf);
		if (txn ? cfg_no_txn(p, j, cfg_map_get(p, src, "sql"),
				     r->source_sql, what, NULL, NULL, 0,
				     r->source_wh) < 0 :
			  cfg_no_wall_clock(p, j, cfg_map_get(p, src, "sql"),
					    r->source_sql, what, r->source_wh) < 0)
			return -1;
		snprintf(what, sizeof what, " reconcile %s target", buf);
		if (txn ? cfg_no_txn(p, j, cfg_map_get(p, it, "target"),
				     r->target_sql, what, NULL, NULL, 0,
				     j->warehouse) < 0 :
			  cfg_no_wall_clock(p, j, cfg_map_get(p, it, "target"),
					    r->target_sql, what, j->warehouse) < 0)
			return -1;
	}
	return 0;
}

/* The job's SQL and its checks must not read the wall clock. */
int
cfg_job_clock(struct cfg_parser *p, struct job_def *j, yaml_node_t *map)
{
	yaml_node_t *n_sql = cfg_map_get(p, map, "sql");
	yaml_node_t *n_file = cfg_map_get(p, map, "sql_file");
	yaml_node_t *n;
	char chk[CFG_QUOTE_MAX * 4 + 32], buf[CFG_QUOTE_MAX * 4 + 16];
	size_t i;

	if (j->sql != NULL && !j->allow_wall_clock) {
		const char *what = NULL;
		long off;

		if (n_sql != NULL) {
			if (cfg_no_wall_clock(p, j, n_sql, j->sql, "",
					      j->warehouse) < 0)
				return -1;
		} else if ((off = cfg_wall_clock(p->cfg, j, j->sql, &what)) >= 0) {
			int line, col;

			cfg_text_pos(j->sql, (size_t)off, &line, &col);
			return cfg_fail(p, n_file->start_mark,
					"job \"%s\" reads the wall clock (%s) at %s:%d:%d: take the date from :partition, or set allow_wall_clock: true",
					j->name, what, cfg_text(n_file), line, col);
		}
	}
	if ((n = cfg_map_get(p, map, "checks")) != NULL)
		for (i = 0; i < j->nchecks; i++) {
			snprintf(chk, sizeof chk, " check %s",
				 cfg_quote(j->checks[i].name, buf, sizeof buf));
			if (cfg_no_wall_clock(p, j,
					      cfg_map_get(p, cfg_seq_item(p, n, i), "sql"),
					      j->checks[i].sql, chk, j->warehouse) < 0)
				return -1;
		}
	return cfg_recon_scan(p, j, map, false);
}

/*
 * Refuse SQL that controls the run's transaction (sqlscan_txn: COMMIT,
 * ROLLBACK, ATTACH, ...): the daemon begins and commits each partition's
 * transaction itself.  `what` names the SQL after the job (" check
 * \"c\"", " metric \"m\"", " late_data" or "" for the job's own); n is
 * its scalar, or NULL when the text came from `file` (sql_file:, whose key
 * is `key`); flags as sqlscan_txn's.
 */
static int
cfg_no_txn(struct cfg_parser *p, const struct job_def *j,
	   const yaml_node_t *n, const char *sql, const char *what,
	   const yaml_node_t *key, const char *file, int flags, int wh)
{
	enum sqlscan_dialect d = SQLSCAN_SQLITE;
	struct sqlscan_txn t;
	int line, col;

	if (wh >= 0 && p->cfg->warehouses[wh].kind == WH_POSTGRES)
		d = SQLSCAN_PG;
	if (sqlscan_txn(sql, d, flags, &t) < 0)
		return 0;
	if (n == NULL) {
		cfg_text_pos(sql, (size_t)t.off, &line, &col);
		return cfg_fail(p, key->start_mark,
				"job \"%s\"%s statement %d controls the run's transaction (%s) at %s:%d:%d: " SQLSCAN_TXN_ADVICE,
				j->name, what, t.stmt, t.what, file, line, col);
	}
	cfg_scalar_pos(p, n, (size_t)t.off, &line, &col);
	return cfg_fail_at(p, line, col,
			   "job \"%s\"%s statement %d controls the run's transaction (%s): " SQLSCAN_TXN_ADVICE,
			   j->name, what, t.stmt, t.what);
}

/* The SQL a job runs (its own, its checks, its metrics inside the run's
 * transaction; its late_data sensor) must not control transactions. */
int
cfg_job_txn(struct cfg_parser *p, struct job_def *j, yaml_node_t *map)
{
	yaml_node_t *n_file = cfg_map_get(p, map, "sql_file");
	yaml_node_t *n, *it;
	yaml_node_pair_t *pr;
	char what[CFG_QUOTE_MAX * 4 + 32], buf[CFG_QUOTE_MAX * 4 + 16];
	size_t i;

	if (j->sql != NULL &&
	    cfg_no_txn(p, j, n_file != NULL ? NULL : cfg_map_get(p, map, "sql"),
		       j->sql, "", n_file, n_file != NULL ? cfg_text(n_file) :
		       NULL, 0, j->warehouse) < 0)
		return -1;
	if ((n = cfg_map_get(p, map, "checks")) != NULL)
		for (i = 0; i < j->nchecks; i++) {
			snprintf(what, sizeof what, " check %s",
				 cfg_quote(j->checks[i].name, buf, sizeof buf));
			if (cfg_no_txn(p, j, cfg_map_get(p, cfg_seq_item(p, n, i),
						       "sql"),
				       j->checks[i].sql, what, NULL, NULL, 0,
				       j->warehouse) < 0)
				return -1;
		}
	if ((n = cfg_map_get(p, map, "metrics")) != NULL)
		for (i = 0, pr = n->data.mapping.pairs.start;
		     i < j->nmetrics && pr < n->data.mapping.pairs.top;
		     i++, pr++) {
			it = cfg_node(p, pr->value);
			if (it->type == YAML_MAPPING_NODE)
				it = cfg_map_get(p, it, "sql");
			snprintf(what, sizeof what, " metric %s",
				 cfg_quote(j->metrics[i].name, buf, sizeof buf));
			if (cfg_no_txn(p, j, it, j->metrics[i].sql, what, NULL,
				       NULL, SQLSCAN_TXN_EXPR, j->warehouse) < 0)
				return -1;
		}
	if (j->late_data != NULL &&
	    (n = cfg_map_get(p, map, "late_data")) != NULL &&
	    cfg_no_txn(p, j, cfg_map_get(p, n, "sql"), j->late_data->sql,
		       " late_data", NULL, NULL, 0, j->warehouse) < 0)
		return -1;
	return cfg_recon_scan(p, j, map, true);
}
