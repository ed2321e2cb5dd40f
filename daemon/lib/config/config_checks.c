/*
 * config_checks.c - a job's checks and guardrails: checks:
 * (cfg_check_keys), reconcile: (cfg_recon_keys, cfg_recon_source_keys),
 * metrics: and their trend: (cfg_metric_keys, cfg_trend_keys) and the
 * late_data: sensor (cfg_late_keys).
 */
#include "config_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trend.h"
#include "xalloc.h"

const struct cfg_key cfg_check_keys[] = {
	{ "name", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(check_def, name), 0,
	  "a name", 0 },
	{ "sql", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(check_def, sql), 0,
	  "SQL text", 0 },
	{ "severity", YAML_SCALAR_NODE, cfg_h_severity,
	  CFG_OFF(check_def, warn), 0, "error or warn", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* checks: a sequence of {name, sql}. */
int
cfg_h_checks(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	     yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;
	size_t i, m, n = cfg_seq_len(val);
	char saved[CFG_CTX_MAX];
	int rc = 0;

	if (n == 0)
		return cfg_bad_value(p, k, val);
	j->checks = xcalloc(n, sizeof *j->checks);
	j->nchecks = n;
	memcpy(saved, p->ctx, sizeof saved);
	for (i = 0; i < n && rc == 0; i++) {
		struct check_def *c = &j->checks[i];
		yaml_node_t *it = cfg_seq_item(p, val, i), *nm;

		if (it->type != YAML_MAPPING_NODE) {
			rc = cfg_bad_value(p, k, it);
			break;
		}
		c->pos = cfg_pos(it->start_mark);
		nm = cfg_item_ctx(p, it, "check", i, saved);
		rc = cfg_parse_map(p, it, cfg_check_keys, c);
		if (rc == 0 && (c->name == NULL || c->sql == NULL))
			rc = cfg_fail(p, it->start_mark, "%s needs %s",
				      p->ctx,
				      c->name == NULL && c->sql == NULL ?
					      "name: and sql:" :
				      c->name == NULL ? "name:" : "sql:");
		for (m = 0; rc == 0 && m < i; m++)
			if (strcmp(j->checks[m].name, c->name) == 0)
				rc = cfg_fail(p, nm->start_mark,
					      "duplicate %s (first at line %d); check names must be unique",
					      p->ctx, j->checks[m].pos.line);
	}
	cfg_restore_ctx(p, saved);
	return rc;
}

/* tolerance: "0.1%" or an absolute number (reconcile.h). */
static int
cfg_h_tolerance(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		yaml_node_t *key, yaml_node_t *val)
{
	struct reconcile_def *r = obj;
	const char *s = cfg_text(val);
	size_t n = strlen(s);
	char num[64];

	(void)key;
	/* a percentage may be quoted ("0.1%"); a number may not */
	if ((n == 0 || s[n - 1] != '%') && cfg_want_plain(p, k, val) < 0)
		return -1;
	if (n == 0 || n >= sizeof num)
		return cfg_bad_value(p, k, val);
	memcpy(num, s, n);
	num[n - (s[n - 1] == '%')] = '\0';
	if (num[0] == '-' || !cfg_decimal(num, true) ||
	    reconcile_tolerance_parse(s, &r->tolerance) < 0)
		return cfg_bad_value(p, k, val);
	return 0;
}

const struct cfg_key cfg_recon_source_keys[] = {
	{ "warehouse", YAML_SCALAR_NODE, cfg_h_str,
	  CFG_OFF(reconcile_def, source_warehouse), 0, "a warehouse name", 0 },
	{ "sql", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(reconcile_def, source_sql),
	  0, "SQL text", 0 },
	{ "timeout", YAML_SCALAR_NODE, cfg_h_posduration,
	  CFG_OFF(reconcile_def, source_timeout), 0, CFG_POSDURATION, 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* source: {warehouse, sql, timeout}. */
static int
cfg_h_recon_source(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		   yaml_node_t *key, yaml_node_t *val)
{
	struct reconcile_def *r = obj;

	(void)k;
	(void)key;
	if (cfg_parse_map(p, val, cfg_recon_source_keys, r) < 0)
		return -1;
	if (r->source_warehouse == NULL || r->source_sql == NULL)
		return cfg_fail(p, val->start_mark, "%s: source needs warehouse:"
				" and sql:", p->ctx);
	return 0;
}

const struct cfg_key cfg_recon_keys[] = {
	{ "name", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(reconcile_def, name), 0,
	  "a name", 0 },
	{ "source", YAML_MAPPING_NODE, cfg_h_recon_source, 0, 0,
	  "a mapping {warehouse, sql, timeout}", 0 },
	{ "target", YAML_SCALAR_NODE, cfg_h_str,
	  CFG_OFF(reconcile_def, target_sql), 0, "SQL text", 0 },
	{ "tolerance", YAML_SCALAR_NODE, cfg_h_tolerance, 0, 0,
	  "a percentage like 0.1% or a non-negative number", 0 },
	{ "severity", YAML_SCALAR_NODE, cfg_h_severity,
	  CFG_OFF(reconcile_def, warn), 0, "error or warn", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* reconcile: a sequence of {name, source, target, tolerance, severity}. */
int
cfg_h_reconcile(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;
	size_t i, m, n = cfg_seq_len(val);
	char saved[CFG_CTX_MAX], buf[CFG_QUOTE_MAX * 4 + 16];
	int rc = 0;

	if (n == 0)
		return cfg_bad_value(p, k, val);
	j->reconciles = xcalloc(n, sizeof *j->reconciles);
	j->nreconciles = n;
	memcpy(saved, p->ctx, sizeof saved);
	for (i = 0; i < n && rc == 0; i++) {
		struct reconcile_def *r = &j->reconciles[i];
		yaml_node_t *it = cfg_seq_item(p, val, i), *nm;

		r->source_wh = -1;
		r->source_timeout = 60;
		if (it->type != YAML_MAPPING_NODE) {
			rc = cfg_bad_value(p, k, it);
			break;
		}
		r->pos = cfg_pos(it->start_mark);
		nm = cfg_item_ctx(p, it, "reconcile", i, saved);
		rc = cfg_parse_map(p, it, cfg_recon_keys, r);
		if (rc == 0 && (r->name == NULL || r->source_sql == NULL ||
				r->target_sql == NULL))
			rc = cfg_fail(p, it->start_mark, "%s needs name:, source:"
				      " and target:", p->ctx);
		for (m = 0; rc == 0 && m < p->cfg->nwarehouses; m++)
			if (strcmp(p->cfg->warehouses[m].name,
				   r->source_warehouse) == 0)
				r->source_wh = (int)m;
		if (rc == 0 && r->source_wh < 0)
			rc = cfg_fail(p, it->start_mark, "%s: unknown source"
				      " warehouse %s", p->ctx,
				      cfg_quote(r->source_warehouse, buf,
						sizeof buf));
		for (m = 0; rc == 0 && m < i; m++)
			if (strcmp(j->reconciles[m].name, r->name) == 0)
				rc = cfg_fail(p, nm->start_mark,
					      "duplicate %s (first at line %d); reconcile names must be unique",
					      p->ctx, j->reconciles[m].pos.line);
	}
	cfg_restore_ctx(p, saved);
	return rc;
}

/* max_change: a percentage "50%" (> 0). */
static int
cfg_h_max_change(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		 yaml_node_t *key, yaml_node_t *val)
{
	struct metric_def *m = obj;
	const char *s = cfg_text(val);
	size_t n = strlen(s);
	char num[64], *end;
	double v;

	if (n < 2 || n >= sizeof num || s[n - 1] != '%' || s[0] == '-' ||
	    s[0] == '+' || s[0] == ' ')
		return cfg_bad_value(p, k, val);
	memcpy(num, s, n - 1);
	num[n - 1] = '\0';
	if (!cfg_decimal(num, true))
		return cfg_bad_value(p, k, val);
	errno = 0;
	v = strtod(num, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v <= 0)
		return cfg_bad_value(p, k, val);
	m->has_max_change = true;
	m->max_change = v;
	return 0;
}

/* trend: last and min_history, integers from TREND_LAST_MIN to
 * TREND_LAST_MAX. */
static int
cfg_h_trend_int(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		yaml_node_t *key, yaml_node_t *val)
{
	int64_t v;

	(void)key;
	if (cfg_want_plain(p, k, val) < 0)
		return -1;
	if (!cfg_parse_int64(cfg_text(val), &v) || v < TREND_LAST_MIN ||
	    v > TREND_LAST_MAX)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, int) = (int)v;
	return 0;
}

/* trend: max_sigma, a positive finite number. */
static int
cfg_h_trend_sigma(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		  yaml_node_t *key, yaml_node_t *val)
{
	double v;

	(void)key;
	if (cfg_want_plain(p, k, val) < 0)
		return -1;
	if (!cfg_real(cfg_text(val), &v) || v <= 0)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, double) = v;
	return 0;
}

#define CFG_TREND_INT "an integer from 2 to 1000"
const struct cfg_key cfg_trend_keys[] = {
	{ "last", YAML_SCALAR_NODE, cfg_h_trend_int,
	  CFG_OFF(trend_def, last), 0, CFG_TREND_INT, 0 },
	{ "max_sigma", YAML_SCALAR_NODE, cfg_h_trend_sigma,
	  CFG_OFF(trend_def, max_sigma), 0, "a positive number like 3", 0 },
	{ "min_history", YAML_SCALAR_NODE, cfg_h_trend_int,
	  CFG_OFF(trend_def, min_history), 0, CFG_TREND_INT, 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* trend: {last, max_sigma, min_history} (trend.h): the metric against the
 * values of the job's most recent partitions. */
static int
cfg_h_trend(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	struct metric_def *m = obj;
	struct trend_def *t = &m->trend;
	yaml_node_t *mh;

	(void)k;
	(void)key;
	if (cfg_parse_map(p, val, cfg_trend_keys, t) < 0)
		return -1;
	if (t->last == 0 || t->max_sigma == 0)
		return cfg_fail(p, val->start_mark, "%s: trend needs last: (the"
				" partitions it looks back on) and max_sigma:"
				" (how many standard deviations from their mean"
				" are allowed)", p->ctx);
	mh = cfg_map_get(p, val, "min_history");
	if (mh == NULL)
		t->min_history = t->last < TREND_MIN_HISTORY_DEFAULT ? t->last :
				 TREND_MIN_HISTORY_DEFAULT;
	else if (t->min_history > t->last)
		return cfg_fail(p, mh->start_mark, "%s: trend min_history %d is"
				" above last %d; lower it (or raise last)",
				p->ctx, t->min_history, t->last);
	t->has = true;
	return 0;
}

const struct cfg_key cfg_metric_keys[] = {
	{ "sql", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(metric_def, sql), 0,
	  "an SQL expression", 0 },
	{ "max_change", YAML_SCALAR_NODE, cfg_h_max_change, 0, 0,
	  "a percentage like 50%", 0 },
	{ "trend", YAML_MAPPING_NODE, cfg_h_trend, 0, 0,
	  "a mapping {last, max_sigma, min_history}", 0 },
	{ "severity", YAML_SCALAR_NODE, cfg_h_severity,
	  CFG_OFF(metric_def, warn), 0, "error or warn", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* metrics: name -> "SQL expression" or name -> {sql, max_change}. */
int
cfg_h_metrics(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	      yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;
	yaml_node_pair_t *pr;
	size_t n = (size_t)(val->data.mapping.pairs.top -
			    val->data.mapping.pairs.start);
	char saved[CFG_CTX_MAX], buf[CFG_QUOTE_MAX * 4 + 16];
	int rc = 0;

	if (n == 0)
		return cfg_bad_value(p, k, val);
	if (cfg_check_dups(p, val) < 0)
		return -1;
	j->metrics = xcalloc(n, sizeof *j->metrics);
	memcpy(saved, p->ctx, sizeof saved);
	for (pr = val->data.mapping.pairs.start;
	     pr < val->data.mapping.pairs.top && rc == 0; pr++) {
		struct metric_def *m = &j->metrics[j->nmetrics++];
		yaml_node_t *kn = cfg_node(p, pr->key);
		yaml_node_t *vn = cfg_node(p, pr->value);
		static const struct cfg_key self = { "sql", YAML_SCALAR_NODE,
			NULL, 0, 0, "an SQL expression", 0 };

		m->pos = cfg_pos(kn->start_mark);
		m->name = xstrdup(cfg_text(kn));
		cfg_set_ctx(p, "metric %s of %s",
			    cfg_quote(m->name, buf, sizeof buf), saved);
		if (vn->type == YAML_SCALAR_NODE) {
			if (cfg_want_text(p, &self, vn) < 0)
				rc = -1;
			else
				m->sql = xstrdup(cfg_text(vn));
		} else if (vn->type == YAML_MAPPING_NODE) {
			rc = cfg_parse_map(p, vn, cfg_metric_keys, m);
			if (rc == 0 && m->sql == NULL)
				rc = cfg_fail(p, vn->start_mark, "%s needs sql:",
					      p->ctx);
			if (rc == 0 && m->warn && !m->has_max_change &&
			    !m->trend.has)
				rc = cfg_fail(p, vn->start_mark,
					      "%s: severity: needs max_change:"
					      " or trend:", p->ctx);
		} else {
			rc = cfg_fail(p, vn->start_mark,
				      "%s must be an SQL expression or a mapping with sql:, max_change: and trend:, got %s",
				      p->ctx, cfg_got(vn, buf, sizeof buf));
		}
	}
	cfg_restore_ctx(p, saved);
	return rc;
}

/* The late_data sensor's own table. */
const struct cfg_key cfg_late_keys[] = {
	{ "sql", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(late_data_def, sql), 0,
	  "SQL text", 0 },
	{ "every", YAML_SCALAR_NODE, cfg_h_posduration,
	  CFG_OFF(late_data_def, every), 0,
	  "a positive duration like 30s, 15m, 2h or 1d", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* late_data: {sql, every}, both required. */
int
cfg_h_late_data(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;
	char saved[CFG_CTX_MAX];
	int rc;

	j->late_data = xcalloc(1, sizeof *j->late_data);
	j->late_data->pos = cfg_pos(val->start_mark);
	memcpy(saved, p->ctx, sizeof saved);
	cfg_set_ctx(p, "late_data of %s", saved);
	rc = cfg_parse_map(p, val, cfg_late_keys, j->late_data);
	if (rc == 0 && (j->late_data->sql == NULL || j->late_data->every == 0))
		rc = cfg_fail(p, val->start_mark, "%s needs %s", p->ctx,
			      j->late_data->sql == NULL &&
					      j->late_data->every == 0 ?
				      "sql: and every:" :
			      j->late_data->sql == NULL ? "sql:" : "every:");
	cfg_restore_ctx(p, saved);
	return rc;
}
