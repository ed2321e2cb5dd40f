/*
 * config_lineage.c - lineage from the SQL (DESIGN.md, "Lineage from the
 * SQL"; sqltables.h), once the upstream graph is linked: each job's reads
 * and writes, reads_ignored checked against them, and the first read of
 * a table another job writes whose writer is not in the reader's upstream.
 *
 * The rules:
 *  - a job writes its `table` and the tables its statements write;
 *  - its statements, checks and metrics read; a check's or a metric's
 *    read of the job's own tables is what checks are for, not a
 *    dependency; its statements' read of one is (a running total): such a job
 *    lists itself in upstream with a lookback (config_graph.c,
 *    cfg_link_self), or names the table in reads_ignored;
 *  - tables are matched within one warehouse (sqltables_same);
 *  - reads_ignored names a table the job reads, or the load fails.
 *
 * An undeclared read does not fail the load: config->lineage_error holds
 * it, for --check-config and a reload to refuse and a start to warn of
 * (so that an upgrade never stops a host whose file has one).
 */
#include "config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqltables.h"
#include "xalloc.h"

/* One SQL text of a job: its scalar (NULL: from sql_file), whether it is
 * the job's statements, and the tables it touches. */
struct lin_text {
	yaml_node_t *node;
	bool own;
	struct sqltables t;
};

struct lin_job {
	struct lin_text *v;
	size_t n;
};

static void
lin_add(struct lin_job *l, const char *sql, yaml_node_t *node, bool own,
	enum sqlscan_dialect d)
{
	struct lin_text *x;

	if (sql == NULL)
		return;
	l->v = xreallocarray(l->v, l->n + 1, sizeof *l->v);
	x = &l->v[l->n++];
	x->node = node;
	x->own = own;
	sqltables_scan(sql, d, &x->t);
}

/* The SQL texts of job a: statements, checks, metrics. */
static void
lin_collect(struct cfg_parser *p, size_t a, struct lin_job *l)
{
	const struct job_def *j = &p->cfg->jobs[a];
	enum sqlscan_dialect d = config_job_dialect(p->cfg, j);
	yaml_node_t *map = p->job_nodes[a], *n, *it;
	yaml_node_pair_t *pr;
	size_t i;

	cfg_use(p, p->job_src[a]);
	lin_add(l, j->sql, j->sql_file != NULL ? NULL :
		cfg_map_get(p, map, "sql"), true, d);
	n = cfg_map_get(p, map, "checks");
	for (i = 0; n != NULL && i < j->nchecks; i++)
		lin_add(l, j->checks[i].sql,
			cfg_map_get(p, cfg_seq_item(p, n, i), "sql"), false, d);
	n = cfg_map_get(p, map, "metrics");
	for (i = 0, pr = n != NULL ? n->data.mapping.pairs.start : NULL;
	     n != NULL && i < j->nmetrics && pr < n->data.mapping.pairs.top;
	     i++, pr++) {
		it = cfg_node(p, pr->value);
		if (it->type == YAML_MAPPING_NODE)
			it = cfg_map_get(p, it, "sql");
		lin_add(l, j->metrics[i].sql, it, false, d);
	}
}

static void
lin_free(struct lin_job *l)
{
	for (size_t i = 0; i < l->n; i++)
		sqltables_free(&l->v[i].t);
	free(l->v);
}

/* Index of name in v[0..n) as dialect d compares tables, or -1. */
static int
lin_find(char **v, size_t n, const char *name, enum sqlscan_dialect d)
{
	for (size_t i = 0; i < n; i++)
		if (sqltables_same(v[i], name, d))
			return (int)i;
	return -1;
}

/* Append name to *v unless there. */
static void
lin_put(char ***v, size_t *n, const char *name, enum sqlscan_dialect d)
{
	if (lin_find(*v, *n, name, d) >= 0)
		return;
	*v = xreallocarray(*v, *n + 1, sizeof **v);
	(*v)[(*n)++] = xstrdup(name);
}

/* Job j's writes: its table, then its statements'. */
static void
lin_writes(const struct config *cfg, struct job_def *j,
	   const struct lin_job *l)
{
	enum sqlscan_dialect d = config_job_dialect(cfg, j);

	if (j->table != NULL)
		lin_put(&j->writes, &j->nwrites, j->table, d);
	for (size_t i = 0; i < l->n; i++)
		for (size_t r = 0; l->v[i].own && r < l->v[i].t.n; r++)
			if (l->v[i].t.refs[r].use == SQLTABLES_WRITE)
				lin_put(&j->writes, &j->nwrites,
					l->v[i].t.refs[r].name, d);
}

/* Job j's reads, a check's or metric's of its own writes left out. */
static void
lin_reads(const struct config *cfg, struct job_def *j,
	  const struct lin_job *l)
{
	enum sqlscan_dialect d = config_job_dialect(cfg, j);

	for (size_t i = 0; i < l->n; i++)
		for (size_t r = 0; r < l->v[i].t.n; r++) {
			const struct sqltables_ref *f = &l->v[i].t.refs[r];

			if (f->use != SQLTABLES_READ || (!l->v[i].own &&
			    lin_find(j->writes, j->nwrites, f->name, d) >= 0))
				continue;
			lin_put(&j->reads, &j->nreads, f->name, d);
		}
}

/* Each reads_ignored name must be a table job a reads. */
static int
lin_ignored(struct cfg_parser *p, size_t a, const struct lin_job *l)
{
	const struct job_def *j = &p->cfg->jobs[a];
	enum sqlscan_dialect d = config_job_dialect(p->cfg, j);
	char q[CFG_QUOTE_MAX * 4 + 16];

	for (size_t k = 0; k < j->nreads_ignored; k++) {
		bool read = false;

		for (size_t i = 0; i < l->n && !read; i++)
			for (size_t r = 0; r < l->v[i].t.n && !read; r++)
				read = l->v[i].t.refs[r].use == SQLTABLES_READ &&
				    sqltables_same(l->v[i].t.refs[r].name,
						   j->reads_ignored[k], d);
		if (read)
			continue;
		cfg_use(p, p->job_src[a]);
		return cfg_fail(p, cfg_seq_item(p, cfg_map_get(p,
				p->job_nodes[a], "reads_ignored"), k)->start_mark,
				"job \"%s\": reads_ignored names %s, which its SQL does not read; remove it",
				j->name, cfg_quote(j->reads_ignored[k], q, sizeof q));
	}
	return 0;
}

/* The writer of table `name` that job a does not list in upstream (a
 * itself for its own table), or -1. */
static int
lin_unlisted(const struct config *cfg, size_t a, const char *name)
{
	const struct job_def *j = &cfg->jobs[a];
	enum sqlscan_dialect d = config_job_dialect(cfg, j);

	for (size_t b = 0; b < cfg->njobs; b++) {
		const struct job_def *w = &cfg->jobs[b];
		bool listed = false;

		if (w->warehouse != j->warehouse ||
		    lin_find(w->writes, w->nwrites, name, d) < 0)
			continue;
		for (size_t u = 0; u < j->nupstream; u++)
			listed = listed || j->upstream_idx[u] == (int)b;
		/* a lookback on itself declares the read of its own table */
		listed = listed || (b == a && j->self_lookback > 0);
		if (!listed)
			return (int)b;
	}
	return -1;
}

/* Fail at the read r of text x of job a (its file's position). */
static int
lin_fail(struct cfg_parser *p, size_t a, const struct lin_text *x,
	 const struct sqltables_ref *r, int b)
{
	const struct job_def *j = &p->cfg->jobs[a];
	const char *file = p->file;
	int line, col;
	char msg[ERR_MSG_MAX / 2];

	if (b == (int)a)
		snprintf(msg, sizeof msg, "job \"%s\" reads its own table %s: a repair of one of its partitions would leave the later partitions that read it stale; add {job: %s, lookback: 1} to its upstream if a partition reads its earlier partitions (a running total: a repair then rebuilds every later partition in order), or reads_ignored: [%s] if each partition reads only rows it writes itself",
			 j->name, r->name, j->name, r->name);
	else
		snprintf(msg, sizeof msg, "job \"%s\" reads %s, which job \"%s\" writes, but does not list it in upstream: a backfill of %s would leave %s stale; add it to upstream, or to reads_ignored: [%s] if %s reads it as a lookup that must not trigger rebuilds",
			 j->name, r->name, p->cfg->jobs[b].name,
			 p->cfg->jobs[b].name, j->name, r->name, j->name);
	cfg_use(p, p->job_src[a]);
	if (x->node != NULL) {
		cfg_scalar_pos(p, x->node, r->off, &line, &col);
		return cfg_fail_at(p, line, col, "%s", msg);
	}
	cfg_text_pos(j->sql, r->off, &line, &col);
	p->file = j->sql_file;
	cfg_fail_at(p, line, col, "%s", msg);
	p->file = file;
	return -1;
}

/* The first undeclared read of job a, into p->err. */
static int
lin_check(struct cfg_parser *p, size_t a, const struct lin_job *l)
{
	const struct job_def *j = &p->cfg->jobs[a];
	enum sqlscan_dialect d = config_job_dialect(p->cfg, j);

	for (size_t i = 0; i < l->n; i++)
		for (size_t r = 0; r < l->v[i].t.n; r++) {
			const struct sqltables_ref *f = &l->v[i].t.refs[r];
			int b;

			if (f->use != SQLTABLES_READ ||
			    lin_find(j->reads_ignored, j->nreads_ignored,
				     f->name, d) >= 0 ||
			    (b = lin_unlisted(p->cfg, a, f->name)) < 0 ||
			    (b == (int)a && !l->v[i].own))
				continue;
			return lin_fail(p, a, &l->v[i], f, b);
		}
	return 0;
}

/* Reads and writes of every job; reads_ignored checked (a load error);
 * the first undeclared read into cfg->lineage_error. */
int
cfg_lineage(struct cfg_parser *p)
{
	struct config *cfg = p->cfg;
	struct lin_job *l = xcalloc(cfg->njobs + 1, sizeof *l);
	struct err *saved = p->err, undeclared;
	int rc = 0;
	size_t a;

	for (a = 0; a < cfg->njobs; a++) {
		lin_collect(p, a, &l[a]);
		lin_writes(cfg, &cfg->jobs[a], &l[a]);
	}
	for (a = 0; a < cfg->njobs && rc == 0; a++) {
		lin_reads(cfg, &cfg->jobs[a], &l[a]);
		rc = lin_ignored(p, a, &l[a]);
	}
	err_clear(&undeclared);
	p->err = &undeclared;
	for (a = 0; a < cfg->njobs && rc == 0; a++)
		if (lin_check(p, a, &l[a]) < 0) {
			cfg->lineage_error = xstrdup(undeclared.msg);
			break;
		}
	p->err = saved;
	for (a = 0; a < cfg->njobs; a++)
		lin_free(&l[a]);
	free(l);
	return rc;
}

int
config_lineage_refuse(struct config **cfg, struct err *err)
{
	if ((*cfg)->lineage_error == NULL)
		return 0;
	err_set(err, EXIT_BAD_INPUT, "%s", (*cfg)->lineage_error);
	config_unref(*cfg);
	*cfg = NULL;
	return -1;
}
