/*
 * config_job.c - the jobs: section (cfg_job_keys): a job's own keys and
 * hooks, then its rules across keys once its mapping is read (start <= end,
 * one of sql/sql_file/command, its warehouse, the keys that need others, a
 * ClickHouse job's).  Its checks, reconcile, metrics and late_data have
 * their tables in config_checks.c; the scan of its SQL is config_sql.c.
 */
#include "config_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chsql.h"
#include "tz.h"
#include "xalloc.h"

/* batch: true (all of a request's partitions in one run), false, or N
 * (partitions per run, at least 2: batch: 1 is false). */
static int
cfg_h_batch(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;
	int64_t v;

	(void)key;
	j->batch_size = 0;
	if (cfg_want_plain(p, k, val) < 0)
		return -1;
	if (strcmp(cfg_text(val), "true") == 0 ||
	    strcmp(cfg_text(val), "false") == 0) {
		j->batch = strcmp(cfg_text(val), "true") == 0;
		return 0;
	}
	if (!cfg_parse_int64(cfg_text(val), &v) || v < 2 || v > INT_MAX)
		return cfg_bad_value(p, k, val);
	j->batch = true;
	j->batch_size = (int)v;
	return 0;
}

/* Job name: valid and not used by an earlier job (val is a scalar: the
 * table says so). */
static int
cfg_h_job_name(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	       yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj, *o;

	for (o = p->cfg->jobs; o < j; o++)
		if (strcmp(o->name, cfg_text(val)) == 0)
			break;
	return cfg_take_name(p, k, val, "job", o < j ? &o->pos : NULL,
			     o < j ? o->file : NULL, &j->name);
}

/* partition: hour | day | week | month | quarter | year. */
static int
cfg_h_grain(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;

	if (!cfg_is_null(val) && strcmp(cfg_text(val), "none") == 0) {
		j->grain = GRAIN_NONE; /* a whole table (issue 41) */
		return 0;
	}
	if (cfg_is_null(val) || cal_grain_parse(cfg_text(val), &j->grain) < 0)
		return cfg_bad_value(p, k, val);
	return 0;
}

/* sql_file: a path, read now into job->sql. */
static int
cfg_h_sql_file(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	       yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;
	char *text;
	size_t len;
	char buf[CFG_QUOTE_MAX * 4 + 16], why[256];

	if (cfg_h_path(p, obj, k, key, val) < 0)
		return -1;
	if (cfg_read_file(j->sql_file, CFG_SQL_FILE_MAX, &text, &len, why,
			  sizeof why) < 0)
		return cfg_fail(p, key->start_mark,
				"%scannot read sql_file %s (%s): %s", p->pfx,
				cfg_quote(cfg_text(val), buf, sizeof buf),
				j->sql_file, why);
	if (strlen(text) != len || len == 0) {
		free(text);
		return cfg_fail(p, key->start_mark,
				"%ssql_file %s (%s) must hold SQL text: it is %s",
				p->pfx, cfg_quote(cfg_text(val), buf, sizeof buf),
				j->sql_file,
				len == 0 ? "empty" : "binary (has NUL bytes)");
	}
	free(j->sql);
	j->sql = text;
	return 0;
}

/* command: argv, a non-empty sequence of strings, argv[0] non-empty. */
static int
cfg_h_command(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	      yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;

	(void)key;
	return cfg_take_argv(p, k, val, NULL, &j->command, &j->command_len);
}

/* One {job: NAME, lookback: N} entry of upstream (entry i): the name's
 * node into *name, the lookback into *lb. */
static int
cfg_upstream_entry(struct cfg_parser *p, yaml_node_t *it, size_t i,
		   yaml_node_t **name, int *lb)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];
	yaml_node_t *v;
	int64_t n;

	if (cfg_check_dups(p, it) < 0)
		return -1;
	for (yaml_node_pair_t *pr = it->data.mapping.pairs.start;
	     pr < it->data.mapping.pairs.top; pr++) {
		yaml_node_t *kn = cfg_node(p, pr->key);

		if (strcmp(cfg_text(kn), "job") != 0 &&
		    strcmp(cfg_text(kn), "lookback") != 0)
			return cfg_fail(p, kn->start_mark, "%supstream entry %zu:"
					" unknown key %s; an entry is a job name"
					" or {job: NAME, lookback: N}", p->pfx,
					i + 1, cfg_quote(cfg_text(kn), buf,
							 sizeof buf));
	}
	*name = cfg_map_get(p, it, "job");
	if (*name == NULL)
		return cfg_fail(p, it->start_mark, "%supstream entry %zu has no"
				" job: write {job: NAME, lookback: N}", p->pfx,
				i + 1);
	v = cfg_map_get(p, it, "lookback");
	if (v == NULL)
		return 0;
	if (v->type != YAML_SCALAR_NODE ||
	    !cfg_parse_int64(cfg_text(v), &n) || n < 0 || n > CFG_LOOKBACK_MAX)
		return cfg_fail(p, v->start_mark, "%supstream entry %zu: lookback"
				" must be an integer from 0 to %d (partitions of"
				" this job before each one), got %s", p->pfx,
				i + 1, CFG_LOOKBACK_MAX,
				cfg_got(v, buf, sizeof buf));
	*lb = (int)n;
	return 0;
}

/* upstream: a sequence of job names or {job: NAME, lookback: N} (DESIGN,
 * "Dependencies are windows"). */
static int
cfg_h_upstream(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	       yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;
	size_t n = cfg_seq_len(val);

	(void)key;
	if (n == 0)
		return cfg_bad_value(p, k, val);
	j->upstream = xcalloc(n, sizeof *j->upstream);
	j->upstream_lookback = xcalloc(n, sizeof *j->upstream_lookback);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *it = cfg_seq_item(p, val, i);

		if (it->type == YAML_MAPPING_NODE &&
		    cfg_upstream_entry(p, it, i, &it,
				       &j->upstream_lookback[i]) < 0)
			return -1;
		if (cfg_want_text(p, k, it) < 0)
			return -1;
		j->upstream[i] = xstrdup(cfg_text(it));
		j->nupstream = i + 1;
	}
	return 0;
}

const char *
hook_kind_name(enum hook_kind k)
{
	static const char *const names[HOOK_COUNT] = { "on_failure", "on_late",
						       "on_refused", "on_warning" };

	return k < HOOK_COUNT ? names[k] : "?";
}

/* Whether every {...} in s is one of the hooks' placeholders; *bad points
 * at the first that is not. */
static bool
cfg_hook_text_ok(const char *s, const char **bad)
{
	static const char *const names[] = { "{job}", "{partition}",
					     "{request}", "{error}", NULL };

	for (const char *c = strchr(s, '{'); c != NULL; c = strchr(c + 1, '{')) {
		bool ok = false;

		for (size_t i = 0; names[i] != NULL; i++)
			if (strncmp(c, names[i], strlen(names[i])) == 0)
				ok = true;
		if (!ok) {
			*bad = c;
			return false;
		}
	}
	return true;
}

/* A hook's argv element: only the placeholders hooks know. */
static int
cfg_hook_elem_ok(struct cfg_parser *p, const struct cfg_key *k,
		 yaml_node_t *it)
{
	char buf[CFG_QUOTE_MAX * 4 + 16], word[CFG_QUOTE_MAX];
	const char *bad = NULL;

	if (cfg_hook_text_ok(cfg_text(it), &bad))
		return 0;
	snprintf(word, sizeof word, "%.*s", (int)strcspn(bad, "}") + 1, bad);
	return cfg_fail(p, it->start_mark,
			"%s%s: unknown placeholder %s; use {job}, {partition}, {request} or {error}",
			p->pfx, k->name, cfg_quote(word, buf, sizeof buf));
}

/* on_failure, on_late, on_refused: argv like command:, whose placeholders
 * are {job}, {partition}, {request} and {error}. */
static int
cfg_h_hook(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	   yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;
	struct hook_def *h = &j->hooks[k->off];

	h->pos = cfg_pos(key->start_mark);
	return cfg_take_argv(p, k, val, cfg_hook_elem_ok, &h->argv, &h->argc);
}

#define CFG_JOB(field) CFG_OFF(job_def, field)

/* nodes: the nodes that may run the job: names, each once, and only
 * with a store that several nodes share. */
static int
cfg_h_job_nodes(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;
	char buf[CFG_QUOTE_MAX * 4 + 16];
	size_t i, o;

	if (p->cfg->state_conninfo == NULL)
		return cfg_fail(p, key->start_mark,
				"%snodes: pins a job to some of several hosts;"
				" it needs state: postgres: (a state store the"
				" nodes share)", p->pfx);
	if (cfg_h_strseq(p, obj, k, key, val) < 0)
		return -1;
	for (i = 0; i < j->nnodes; i++) {
		yaml_node_t *it = cfg_seq_item(p, val, i);

		if (!cfg_valid_name(j->nodes[i]))
			return cfg_fail(p, it->start_mark, "%snode name %s must"
					" be " CFG_NODE_NAME, p->pfx,
					cfg_quote(j->nodes[i], buf, sizeof buf));
		for (o = 0; o < i; o++)
			if (strcmp(j->nodes[o], j->nodes[i]) == 0)
				return cfg_fail(p, it->start_mark, "%snode %s"
						" is listed twice in nodes:",
						p->pfx, cfg_quote(j->nodes[i],
								  buf, sizeof buf));
	}
	return 0;
}

const struct cfg_key cfg_job_keys[] = {
	{ "name", YAML_SCALAR_NODE, cfg_h_job_name, 0, 0, "a name", 0 },
	{ "warehouse", YAML_SCALAR_NODE, cfg_h_str, CFG_JOB(warehouse_name), 0,
	  "a warehouse name", 0 },
	{ "partition", YAML_SCALAR_NODE, cfg_h_grain, 0, 0,
	  "one of hour, day, week, month, quarter, year, none", 0 },
	{ "timezone", YAML_SCALAR_NODE, cfg_h_timezone, CFG_JOB(zone),
	  CFG_JOB(zone_set), "an IANA time zone name such as Europe/Berlin",
	  0 },
	{ "week_start", YAML_SCALAR_NODE, cfg_h_week_start, 0, 0,
	  "monday or sunday", 0 },
	{ "start", YAML_SCALAR_NODE, cfg_h_later, 0, 0, "a date YYYY-MM-DD", 0 },
	{ "end", YAML_SCALAR_NODE, cfg_h_later, 0, 0, "a date YYYY-MM-DD", 0 },
	{ "ready_after", YAML_SCALAR_NODE, cfg_h_duration, CFG_JOB(ready_after),
	  0, CFG_DURATION, 0 },
	{ "catchup", YAML_SCALAR_NODE, cfg_h_bool, CFG_JOB(catchup), 0,
	  "true or false", 0 },
	{ "max_catchup", YAML_SCALAR_NODE, cfg_h_int, CFG_JOB(max_catchup), 1,
	  CFG_POSINT, 0 },
	{ "max_backfill", YAML_SCALAR_NODE, cfg_h_int, CFG_JOB(max_backfill), 1,
	  CFG_POSINT, 0 },
	{ "max_backfill_time", YAML_SCALAR_NODE, cfg_h_duration,
	  CFG_JOB(max_backfill_time), 0, CFG_DURATION " (0s: none)", 0 },
	{ "concurrency", YAML_SCALAR_NODE, cfg_h_int, CFG_JOB(concurrency), 1,
	  CFG_POSINT, 0 },
	{ "retries", YAML_SCALAR_NODE, cfg_h_int, CFG_JOB(retries), 0,
	  "a non-negative integer", 0 },
	{ "retry_backoff", YAML_SCALAR_NODE, cfg_h_duration,
	  CFG_JOB(retry_backoff), 0, CFG_DURATION, 0 },
	{ "timeout", YAML_SCALAR_NODE, cfg_h_duration, CFG_JOB(timeout), 0,
	  CFG_DURATION " (0s: none)", 0 },
	{ "sql", YAML_SCALAR_NODE, cfg_h_str, CFG_JOB(sql), 0, "SQL text", 0 },
	{ "sql_file", YAML_SCALAR_NODE, cfg_h_sql_file, CFG_JOB(sql_file), 0,
	  "a file path", 0 },
	{ "command", YAML_SEQUENCE_NODE, cfg_h_command, 0, 0,
	  "a non-empty sequence of strings (argv, no shell)", 0 },
	{ "checks", YAML_SEQUENCE_NODE, cfg_h_checks, 0, 0,
	  "a sequence of {name, sql}", 0 },
	{ "reconcile", YAML_SEQUENCE_NODE, cfg_h_reconcile, 0, 0,
	  "a sequence of {name, source, target, tolerance}", 0 },
	{ "upstream", YAML_SEQUENCE_NODE, cfg_h_upstream, 0, 0,
	  "a sequence of job names or {job: NAME, lookback: N}", 0 },
	{ "reads_ignored", YAML_SEQUENCE_NODE, cfg_h_strseq,
	  CFG_JOB(reads_ignored), CFG_JOB(nreads_ignored),
	  "a sequence of table names", 0 },
	{ "allow_wall_clock", YAML_SCALAR_NODE, cfg_h_bool,
	  CFG_JOB(allow_wall_clock), 0, "true or false", 0 },
	{ "batch", YAML_SCALAR_NODE, cfg_h_batch, 0, 0,
	  "true, false or a number of partitions per run of at least 2", 0 },
	{ "keep_runs", YAML_SCALAR_NODE, cfg_h_keep, CFG_JOB(keep_runs), 0,
	  CFG_KEEP, 0 },
	{ "verify", YAML_SCALAR_NODE, cfg_h_bool, CFG_JOB(verify), 0,
	  "true or false", 0 },
	{ "table", YAML_SCALAR_NODE, cfg_h_str, CFG_JOB(table), 0,
	  "a table name", 0 },
	{ "partition_column", YAML_SCALAR_NODE, cfg_h_str,
	  CFG_JOB(partition_column), 0, "a column name", 0 },
	{ "key", YAML_SEQUENCE_NODE, cfg_h_strseq, CFG_JOB(key), CFG_JOB(nkey),
	  "a sequence of column names", 0 },
	{ "min_rows", YAML_SCALAR_NODE, cfg_h_int64, CFG_JOB(min_rows), 0,
	  "a non-negative integer", 0 },
	{ "metrics", YAML_MAPPING_NODE, cfg_h_metrics, 0, 0,
	  "a mapping of name to SQL expression or {sql, max_change}", 0 },
	{ "deadline", YAML_SCALAR_NODE, cfg_h_posduration, CFG_JOB(deadline), 0,
	  CFG_POSDURATION, 0 },
	{ "on_failure", YAML_SEQUENCE_NODE, cfg_h_hook, HOOK_FAILURE, 0,
	  "a command: a sequence of strings, program first", 0 },
	{ "on_late", YAML_SEQUENCE_NODE, cfg_h_hook, HOOK_LATE, 0,
	  "a command: a sequence of strings, program first", 0 },
	{ "on_refused", YAML_SEQUENCE_NODE, cfg_h_hook, HOOK_REFUSED, 0,
	  "a command: a sequence of strings, program first", 0 },
	{ "on_warning", YAML_SEQUENCE_NODE, cfg_h_hook, HOOK_WARNING, 0,
	  "a command: a sequence of strings, program first", 0 },
	{ "late_data", YAML_MAPPING_NODE, cfg_h_late_data, 0, 0,
	  "a mapping with sql: and every:", 0 },
	{ "nodes", YAML_SEQUENCE_NODE, cfg_h_job_nodes, CFG_JOB(nodes),
	  CFG_JOB(nnodes), "a sequence of node names", 0 },
	{ "allow_empty", YAML_SCALAR_NODE, cfg_h_bool, CFG_JOB(allow_empty), 0,
	  "true or false", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* Parse a start/end text in the job's calendar (calendar.h
 * cal_range_parse_one): the first (or, with `last`, the last) partition
 * overlapping the local date or hour, and the first (or last) second of
 * its wall clock as written.  A zone's hour may carry its offset. */
static int
cfg_job_date(struct cfg_parser *p, struct job_def *j, yaml_node_t *val,
	     const char *what, bool last, part_t *part, int64_t *t)
{
	const char *s = cfg_text(val);
	struct part_range r;
	struct err e;
	int64_t v;
	char buf[CFG_QUOTE_MAX * 4 + 16], hour[16];

	if (j->grain == GRAIN_HOUR && strchr(s, 'T') != NULL) {
		snprintf(hour, sizeof hour, "%.13s", s);
		if ((j->cal.tz == NULL && strlen(s) != 13) ||
		    cal_parse_hour(hour, &v, &e) < 0)
			return cfg_fail(p, val->start_mark,
					"%s%s must be a date YYYY-MM-DD or an hour YYYY-MM-DDTHH, got %s",
					p->pfx, what, cfg_quote(s, buf, sizeof buf));
		*t = v * 3600 + (last ? 3599 : 0);
	} else if (cal_parse_date(s, &v, &e) < 0) {
		if (j->grain == GRAIN_HOUR)
			return cfg_fail(p, val->start_mark,
					"%s%s must be a date YYYY-MM-DD or an hour YYYY-MM-DDTHH, got %s",
					p->pfx, what, cfg_quote(s, buf, sizeof buf));
		return cfg_fail(p, val->start_mark,
				"%s%s must be a date YYYY-MM-DD, got %s", p->pfx,
				what, cfg_quote(s, buf, sizeof buf));
	} else {
		*t = v * 86400 + (last ? 86399 : 0);
	}
	if (cal_range_parse_one(&j->cal, s, &r, &e) < 0)
		return cfg_fail(p, val->start_mark, "%s%s: %s", p->pfx, what,
				e.msg);
	*part = last ? r.last : r.first;
	return 0;
}

/* A job's start: and end:, end not before start. */
static int
cfg_job_span(struct cfg_parser *p, struct job_def *j, yaml_node_t *map)
{
	yaml_node_t *n_start = cfg_map_get(p, map, "start");
	yaml_node_t *n_end = cfg_map_get(p, map, "end");
	int64_t ts = 0, te = 0;

	if (j->grain == GRAIN_NONE && (n_start != NULL || n_end != NULL))
		return cfg_fail(p, cfg_map_key(p, map, n_start != NULL ?
				"start" : "end")->start_mark,
				"%s%s: a job with partition: none has no dates"
				" and no schedule of its own; remove it (the job"
				" runs when its upstream jobs land)", p->pfx,
				n_start != NULL ? "start" : "end");
	if (n_start != NULL) {
		if (cfg_job_date(p, j, n_start, "start", false, &j->start, &ts) < 0)
			return -1;
		j->has_start = true;
	}
	if (n_end != NULL) {
		if (cfg_job_date(p, j, n_end, "end", true, &j->end, &te) < 0)
			return -1;
		j->has_end = true;
	}
	if (j->has_start && j->has_end && (te < ts || j->end < j->start))
		return cfg_fail(p, n_end->start_mark,
				"%send %s is before start %s", p->pfx,
				cfg_text(n_end), cfg_text(n_start));
	return 0;
}

/* A job's kind (sql:, sql_file: or command:: one) and its warehouse. */
static int
cfg_job_target(struct cfg_parser *p, struct job_def *j, yaml_node_t *map,
	       bool is_sql)
{
	static const char *const kinds[] = { "sql", "sql_file", "command", NULL };
	yaml_node_t *n_sql = cfg_map_get(p, map, "sql");
	yaml_node_t *n_file = cfg_map_get(p, map, "sql_file");
	yaml_node_t *n_cmd = cfg_map_get(p, map, "command");
	yaml_node_t *k2;
	const char *first = NULL;
	char buf[512], q[CFG_QUOTE_MAX * 4 + 16];
	size_t i;

	if (n_sql == NULL && n_file == NULL && n_cmd == NULL)
		return cfg_fail(p, map->start_mark,
				"%s needs one of sql:, sql_file: or command:",
				p->ctx);
	if ((k2 = cfg_second_key(p, map, kinds, &first)) != NULL)
		return cfg_fail(p, k2->start_mark,
				"%s%s and %s are exclusive; keep one", p->pfx,
				first, cfg_text(k2));
	if (j->warehouse_name != NULL) {
		for (i = 0; i < p->cfg->nwarehouses; i++)
			if (strcmp(p->cfg->warehouses[i].name, j->warehouse_name) == 0)
				j->warehouse = (int)i;
		if (j->warehouse < 0)
			return cfg_fail(p, cfg_map_get(p, map, "warehouse")->start_mark,
					"%sunknown warehouse %s; %s", p->pfx,
					cfg_quote(j->warehouse_name, q, sizeof q),
					cfg_wh_list(p->cfg, buf, sizeof buf));
	} else if (is_sql) {
		return cfg_fail(p, map->start_mark,
				"%s runs SQL but names no warehouse: add warehouse: NAME (%s)",
				p->ctx, cfg_wh_list(p->cfg, buf, sizeof buf));
	}
	if (j->concurrency > p->cfg->max_concurrency)
		return cfg_fail(p, cfg_map_get(p, map, "concurrency")->start_mark,
				"%sconcurrency %d is above max_concurrency %d; lower it or raise max_concurrency",
				p->pfx, j->concurrency, p->cfg->max_concurrency);
	return 0;
}

/* The upstream entries naming another job.  A running total's entry on
 * itself (config_graph.c takes it out of upstream[] once every job is
 * read, keeping its lookback in self_lookback) makes no job downstream:
 * one whose only upstream is itself (a balance) is clock-driven, checked
 * here as one before that entry is taken out. */
static size_t
cfg_job_nothers(const struct job_def *j)
{
	size_t n = 0;

	for (size_t i = 0; i < j->nupstream; i++)
		if (j->name == NULL || strcmp(j->upstream[i], j->name) != 0)
			n++;
	return n;
}

/* Keys that need others: deadline, hooks, batch, guardrails, verify. */
static int
cfg_job_needs(struct cfg_parser *p, struct job_def *j, yaml_node_t *map,
	      bool is_sql)
{
	size_t nothers = cfg_job_nothers(j);
	yaml_node_t *k2;
	size_t i;

	if (j->grain == GRAIN_NONE && j->nupstream == 0)
		return cfg_fail(p, cfg_map_get(p, map, "partition")->start_mark,
				"%spartition: none needs upstream: a whole table"
				" has no schedule of its own and is rebuilt when"
				" the jobs it reads land; name them in upstream:",
				p->pfx);
	if (j->grain == GRAIN_NONE &&
	    (k2 = cfg_map_key(p, map, "partition_column")) != NULL)
		return cfg_fail(p, k2->start_mark,
				"%spartition_column: a job with partition: none"
				" writes its whole table, no column holds its"
				" key; remove it", p->pfx);
	if ((k2 = cfg_map_key(p, map, "deadline")) != NULL &&
	    !j->has_start && nothers == 0)
		return cfg_fail(p, k2->start_mark,
				"%sdeadline needs a schedule: add start: (a clock-driven job) or upstream: (a downstream job)",
				p->pfx);
	if ((k2 = cfg_map_key(p, map, "on_late")) != NULL && j->deadline == 0)
		return cfg_fail(p, k2->start_mark,
				"%son_late needs deadline: (how long after a partition is due it is late)",
				p->pfx);
	if ((k2 = cfg_map_key(p, map, "on_refused")) != NULL &&
	    (!j->has_start || nothers > 0))
		return cfg_fail(p, k2->start_mark,
				"%son_refused needs a clock schedule with catchup (start: and no upstream:)",
				p->pfx);
	if (j->batch && !is_sql)
		return cfg_fail(p, cfg_map_get(p, map, "batch")->start_mark,
				"%sbatch: %s needs a SQL job (sql: or sql_file:)",
				p->pfx, cfg_text(cfg_map_get(p, map, "batch")));
	if (j->nreconciles > 0 && !is_sql)
		return cfg_fail(p, cfg_map_key(p, map, "reconcile")->start_mark,
				"%sreconcile needs a SQL job (sql: or sql_file:)",
				p->pfx);
	if (j->warehouse < 0) {
		static const char *const need[] = { "checks", "reconcile", "table",
			"partition_column", "key", "min_rows", "metrics",
			"late_data", NULL };

		for (i = 0; need[i] != NULL; i++)
			if ((k2 = cfg_map_key(p, map, need[i])) != NULL)
				return cfg_fail(p, k2->start_mark,
						"%s%s needs a warehouse to run on: add warehouse: NAME",
						p->pfx, need[i]);
	}
	if ((k2 = cfg_map_key(p, map, "partition_column")) != NULL &&
	    j->table == NULL)
		return cfg_fail(p, k2->start_mark, "%spartition_column needs table:",
				p->pfx);
	{
		static const char *const guard[] = { "key", "min_rows",
						     "metrics", NULL };

		for (i = 0; guard[i] != NULL; i++)
			if ((k2 = cfg_map_key(p, map, guard[i])) != NULL &&
			    (j->table == NULL || j->partition_column == NULL))
				return cfg_fail(p, k2->start_mark,
						"%s%s needs table: and partition_column:",
						p->pfx, guard[i]);
	}
	if (j->verify && (!is_sql || j->table == NULL ||
			  j->partition_column == NULL))
		return cfg_fail(p, cfg_map_get(p, map, "verify")->start_mark,
				"%sverify: true needs a SQL job with table: and"
				" partition_column: (the partition it compares)",
				p->pfx);
	return 0;
}

/* Hours of a zone on a ClickHouse warehouse: each is published as the
 * UTC hour it starts at (chsql_zoned_hour, docs/clickhouse.md), so the
 * zone's offsets must be whole hours from the job's start (1970 without
 * one) to its end (9999 without one); a zone with offsets such as +05:30
 * (Asia/Kolkata, Australia/Lord_Howe) is refused in one line. */
static int
cfg_job_clickhouse_zoned(struct cfg_parser *p, const struct job_def *j,
			 yaml_node_t *map)
{
	yaml_node_t *at = cfg_map_get(p, map, "timezone");
	int64_t from = j->has_start ? cal_start(&j->cal, j->start) : 0;
	int64_t to = j->has_end ? cal_end(&j->cal, j->end) :
		     cal_days_from_civil(9999, 12, 31) * 86400;

	if (tz_hours_on_utc_hours(j->zone, from, to))
		return 0;
	if (at == NULL)
		at = cfg_map_get(p, map, "partition");
	return cfg_fail(p, at->start_mark, "%spartition: hour in timezone %s"
			" is not supported on a clickhouse warehouse: the"
			" zone has offsets that are not whole hours%s, so its"
			" hours do not start on the UTC hours toStartOfHour"
			" partitions by; write partition: day (or longer) in"
			" that zone, or timezone: UTC for its hours", p->pfx,
			tz_name(j->zone), j->has_start ? " after the job's"
			" start" : " since 1970 (start: narrows that)");
}

/* A job on a ClickHouse warehouse is write-audit-publish
 * (docs/clickhouse.md): SQL with table: and partition_column:, plain
 * names (the daemon names the stage after the table); allow_empty only
 * there. */
static int
cfg_job_clickhouse(struct cfg_parser *p, struct job_def *j, yaml_node_t *map,
		   bool is_sql)
{
	yaml_node_t *k2;
	char stage[CHSQL_IDENT_MAX + 32];

	if (j->warehouse < 0 ||
	    p->cfg->warehouses[j->warehouse].kind != WH_CLICKHOUSE) {
		if ((k2 = cfg_map_key(p, map, "allow_empty")) != NULL)
			return cfg_fail(p, k2->start_mark, "%sallow_empty is for"
					" jobs on clickhouse warehouses only",
					p->pfx);
		return 0;
	}
	if (j->grain == GRAIN_NONE)
		return cfg_fail(p, cfg_map_get(p, map, "partition")->start_mark,
				"%spartition: none is not available on a"
				" clickhouse warehouse in this version (its runs"
				" replace one partition of a partition_column);"
				" use a SQLite or PostgreSQL warehouse, or a"
				" command job", p->pfx);
	if (j->grain == GRAIN_HOUR && j->zone != NULL &&
	    cfg_job_clickhouse_zoned(p, j, map) < 0)
		return -1;
	if (!is_sql || j->table == NULL || j->partition_column == NULL)
		return cfg_fail(p, map->start_mark, "%s runs on clickhouse"
				" warehouse \"%s\": it needs sql: (a SELECT of"
				" the partition's rows), table: and"
				" partition_column:", p->ctx,
				p->cfg->warehouses[j->warehouse].name);
	chsql_stage_name(j->table, stage, sizeof stage);
	if (!chsql_ident_ok(j->table) || stage[0] == '\0')
		return cfg_fail(p, cfg_map_get(p, map, "table")->start_mark,
				"%stable must be a plain name ([A-Za-z_][A-Za-z0-9_]*,"
				" under %d bytes with _backfilld_stage_) on a"
				" clickhouse warehouse", p->pfx,
				CHSQL_IDENT_MAX - 17);
	if (!chsql_ident_ok(j->partition_column))
		return cfg_fail(p, cfg_map_get(p, map, "partition_column")->start_mark,
				"%spartition_column must be a plain name"
				" ([A-Za-z_][A-Za-z0-9_]*) on a clickhouse"
				" warehouse", p->pfx);
	for (size_t i = 0; i < j->nkey; i++)
		if (!chsql_ident_ok(j->key[i]))
			return cfg_fail(p, cfg_map_get(p, map, "key")->start_mark,
					"%skey columns must be plain names on a"
					" clickhouse warehouse", p->pfx);
	return 0;
}

/* A job's cross-key rules, once every key of it is read. */
static int
cfg_job_finish(struct cfg_parser *p, struct job_def *j, yaml_node_t *map)
{
	bool is_sql = cfg_map_get(p, map, "sql") != NULL ||
		      cfg_map_get(p, map, "sql_file") != NULL;

	if (cfg_map_get(p, map, "partition") == NULL)
		return cfg_fail(p, map->start_mark,
				"%s needs partition: hour, day, week, month,"
				" quarter, year or none", p->ctx);
	if (cfg_job_calendar(p, j, map) < 0 ||
	    cfg_job_span(p, j, map) < 0 ||
	    cfg_job_target(p, j, map, is_sql) < 0 ||
	    cfg_job_needs(p, j, map, is_sql) < 0 ||
	    cfg_job_clickhouse(p, j, map, is_sql) < 0)
		return -1;
	if (cfg_job_clock(p, j, map) < 0)
		return -1;
	return cfg_job_txn(p, j, map);
}

/* jobs: a sequence, taken in when every file is read. */
int
cfg_h_jobs(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	   yaml_node_t *key, yaml_node_t *val)
{
	p->srcs[p->cur]->jobs = val;
	return 0;
}

/* The jobs of every file, in load order. */
int
cfg_load_jobs(struct cfg_parser *p)
{
	struct config *cfg = p->cfg;
	size_t f, i, n = 0, x = 0;

	for (f = 0; f < p->nsrcs; f++)
		if (p->srcs[f]->jobs != NULL)
			n += cfg_seq_len(p->srcs[f]->jobs);
	if (n == 0)
		return 0;
	cfg->jobs = xcalloc(n, sizeof *cfg->jobs);
	p->job_nodes = xcalloc(n, sizeof *p->job_nodes);
	p->job_src = xcalloc(n, sizeof *p->job_src);
	for (i = 0; i < n; i++) {
		struct job_def *j = &cfg->jobs[i];

		j->warehouse = -1;
		j->catchup = true;
		j->max_catchup = cfg->max_catchup;
		j->max_backfill = cfg->max_backfill;
		j->max_backfill_time = cfg->max_backfill_time;
		j->keep_runs = cfg->keep_runs;
		j->concurrency = 1;
		j->retry_backoff = 30;
	}
	for (f = 0; f < p->nsrcs; f++) {
		yaml_node_t *val = p->srcs[f]->jobs;

		if (val == NULL)
			continue;
		cfg_use(p, f);
		for (i = 0; i < cfg_seq_len(val); i++, x++) {
			struct job_def *j = &cfg->jobs[x];
			yaml_node_t *it = cfg_seq_item(p, val, i);

			cfg->njobs = x + 1;
			p->cur_job = x;
			p->job_nodes[x] = it;
			p->job_src[x] = f;
			j->file = xstrdup(p->srcs[f]->abs);
			if (cfg_item_begin(p, it, i, "job",
					   "name:, partition: and sql:, sql_file: or command:",
					   &j->pos) < 0 ||
			    cfg_parse_map(p, it, cfg_job_keys, j) < 0 ||
			    cfg_job_finish(p, j, it) < 0)
				return -1;
			cfg_set_ctx(p, "%s", "");
		}
	}
	return 0;
}
