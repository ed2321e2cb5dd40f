/*
 * config_hash.c - the hashes of a configuration: each job's code_version
 * (over what defines a run, free of positions), the files' file_hash and
 * the cluster_hash that nodes sharing one configuration agree on.
 */
#include "config_int.h"

#include <stdio.h>
#include <string.h>

#include "fnv.h"

/* FNV-1a 64 over bytes, continuing from h (fnv.h). */
#define cfg_fnv fnv1a64
#define CFG_FNV_INIT FNV1A64_INIT

/* Hash one tagged field: "tag:LEN:bytes", or "tag:-" for NULL. */
static uint64_t
cfg_fnv_field(uint64_t h, const char *tag, const char *s)
{
	char len[32];

	h = cfg_fnv(h, tag, strlen(tag));
	if (s == NULL)
		return cfg_fnv(h, ":-;", 3);
	snprintf(len, sizeof len, ":%zu:", strlen(s));
	h = cfg_fnv(h, len, strlen(len));
	h = cfg_fnv(h, s, strlen(s));
	return cfg_fnv(h, ";", 1);
}

/* Hash one tagged integer field. */
static uint64_t
cfg_fnv_int(uint64_t h, const char *tag, long long v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%lld", v);
	return cfg_fnv_field(h, tag, buf);
}

/* code_version: FNV-1a 64 over the job's definition, canonical and free
 * of positions, so moving a job in the file keeps its version. */
void
cfg_code_version(struct job_def *j)
{
	uint64_t h = CFG_FNV_INIT;
	size_t i;

	h = cfg_fnv_field(h, "name", j->name);
	h = cfg_fnv_field(h, "grain", grain_name(j->grain));
	/* the calendar only when it is not UTC with Monday weeks, so that
	 * every job written before zones keeps its code_version */
	if (j->cal.tz != NULL)
		h = cfg_fnv_field(h, "timezone", cal_zone_name(&j->cal));
	if (j->cal.week_start == WEEK_SUNDAY)
		h = cfg_fnv_field(h, "week_start", "sunday");
	h = cfg_fnv_field(h, "sql", j->sql);
	h = cfg_fnv_int(h, "argc", j->command ? (long long)j->command_len : -1);
	for (i = 0; i < j->command_len; i++)
		h = cfg_fnv_field(h, "argv", j->command[i]);
	h = cfg_fnv_int(h, "checks", (long long)j->nchecks);
	for (i = 0; i < j->nchecks; i++) {
		h = cfg_fnv_field(h, "check.name", j->checks[i].name);
		h = cfg_fnv_field(h, "check.sql", j->checks[i].sql);
		if (j->checks[i].warn)
			h = cfg_fnv_field(h, "check.severity", "warn");
	}
	for (i = 0; i < j->nreconciles; i++) {
		char tol[64];

		reconcile_tolerance_format(&j->reconciles[i].tolerance, tol,
					   sizeof tol);
		h = cfg_fnv_field(h, "reconcile.name", j->reconciles[i].name);
		h = cfg_fnv_field(h, "reconcile.source",
				  j->reconciles[i].source_sql);
		h = cfg_fnv_field(h, "reconcile.target",
				  j->reconciles[i].target_sql);
		h = cfg_fnv_field(h, "reconcile.tolerance", tol);
		h = cfg_fnv_field(h, "reconcile.severity",
				  j->reconciles[i].warn ? "warn" : "error");
	}
	h = cfg_fnv_int(h, "metrics", (long long)j->nmetrics);
	for (i = 0; i < j->nmetrics; i++) {
		char mc[64];

		h = cfg_fnv_field(h, "metric.name", j->metrics[i].name);
		h = cfg_fnv_field(h, "metric.sql", j->metrics[i].sql);
		if (j->metrics[i].has_max_change)
			snprintf(mc, sizeof mc, "%.17g", j->metrics[i].max_change);
		h = cfg_fnv_field(h, "metric.max_change",
				  j->metrics[i].has_max_change ? mc : NULL);
		if (j->metrics[i].warn)
			h = cfg_fnv_field(h, "metric.severity", "warn");
		if (j->metrics[i].trend.has) {
			const struct trend_def *t = &j->metrics[i].trend;

			snprintf(mc, sizeof mc, "%d %.17g %d", t->last,
				 t->max_sigma, t->min_history);
			h = cfg_fnv_field(h, "metric.trend", mc);
		}
	}
	h = cfg_fnv_int(h, "key", (long long)j->nkey);
	for (i = 0; i < j->nkey; i++)
		h = cfg_fnv_field(h, "key.col", j->key[i]);
	h = cfg_fnv_field(h, "table", j->table);
	h = cfg_fnv_field(h, "partition_column", j->partition_column);
	h = cfg_fnv_int(h, "min_rows", (long long)j->min_rows);
	h = cfg_fnv_int(h, "batch", j->batch);
	if (j->batch_size > 0) /* batch: N; batch: true keeps its hash */
		h = cfg_fnv_int(h, "batch_size", j->batch_size);
	if (j->allow_empty) /* ClickHouse only: other jobs keep their hash */
		h = cfg_fnv_int(h, "allow_empty", 1);
	snprintf(j->code_version, sizeof j->code_version, "%016llx",
		 (unsigned long long)h);
}

/* cluster_hash: file_hash's bytes without the lines of node: (each node
 * may name itself), so that nodes sharing one configuration agree. */
static void
cfg_cluster_hash(struct cfg_parser *p, const char *text, size_t len)
{
	uint64_t h;
	size_t i, s = len, e = len;

	if (p->node_e > p->node_s && p->node_e <= len) {
		s = p->node_s;
		e = p->node_e;
	}
	h = cfg_fnv(CFG_FNV_INIT, text, s);
	h = cfg_fnv(h, text + e, len - e);
	for (i = 1; i < p->nsrcs; i++) {
		h = cfg_fnv(h, p->srcs[i]->abs, strlen(p->srcs[i]->abs) + 1);
		h = cfg_fnv(h, p->srcs[i]->text, p->srcs[i]->len);
	}
	snprintf(p->cfg->cluster_hash, sizeof p->cfg->cluster_hash, "%016llx",
		 (unsigned long long)h);
}

/* file_hash and cluster_hash of a loaded configuration whose main file
 * is text: the main file's bytes, then each included file's path and
 * bytes (a configuration without include: hashes as before). */
void
cfg_file_hashes(struct cfg_parser *p, const char *text, size_t len)
{
	uint64_t h = cfg_fnv(CFG_FNV_INIT, text, len);
	size_t i;

	for (i = 1; i < p->nsrcs; i++) {
		h = cfg_fnv(h, p->srcs[i]->abs, strlen(p->srcs[i]->abs) + 1);
		h = cfg_fnv(h, p->srcs[i]->text, p->srcs[i]->len);
	}
	snprintf(p->cfg->file_hash, sizeof p->cfg->file_hash, "%016llx",
		 (unsigned long long)h);
	cfg_cluster_hash(p, text, len);
}
