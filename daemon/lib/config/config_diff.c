/*
 * config_diff.c - the differences between two configurations (see
 * config_diff.h).  Jobs and warehouses are matched by name: a renamed job
 * is one removed and one added.  A job is "changed" when any effective
 * value differs, defaults included (raising the top-level max_catchup
 * changes every job that does not set its own); its file and position are
 * not part of its definition, so moving a job to another file is no
 * change.  Which keys changed is reported by their YAML names; code_version
 * changes only with the keys that define what a run does (config_hash.c).
 */
#include "config_diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tz.h"
#include "xalloc.h"

/* True when two strings (either may be NULL) differ. */
static bool
config_diff_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a != b;
	return strcmp(a, b) != 0;
}

/* True when two string arrays differ. */
static bool
config_diff_strv(char *const *a, size_t na, char *const *b, size_t nb)
{
	size_t i;

	if (na != nb)
		return true;
	for (i = 0; i < na; i++)
		if (config_diff_str(a[i], b[i]))
			return true;
	return false;
}

/* Record key k as changed. */
static void
config_diff_key(struct config_diff_changed *c, const char *k)
{
	if (c->nkeys < CONFIG_DIFF_KEYS_MAX)
		c->keys[c->nkeys++] = k;
}

/* True when the checks of two jobs differ. */
static bool
config_diff_checks(const struct job_def *a, const struct job_def *b)
{
	size_t i;

	if (a->nchecks != b->nchecks)
		return true;
	for (i = 0; i < a->nchecks; i++)
		if (config_diff_str(a->checks[i].name, b->checks[i].name) ||
		    config_diff_str(a->checks[i].sql, b->checks[i].sql))
			return true;
	return false;
}

/* True when the lookbacks of two jobs' upstream entries differ (their
 * names compared apart). */
static bool
config_diff_lookback(const struct job_def *a, const struct job_def *b)
{
	for (size_t i = 0; i < a->nupstream && i < b->nupstream; i++)
		if (job_lookback(a, i) != job_lookback(b, i))
			return true;
	return false;
}

/* True when the metrics of two jobs differ. */
static bool
config_diff_metrics(const struct job_def *a, const struct job_def *b)
{
	size_t i;

	if (a->nmetrics != b->nmetrics)
		return true;
	for (i = 0; i < a->nmetrics; i++) {
		const struct metric_def *x = &a->metrics[i], *y = &b->metrics[i];

		if (config_diff_str(x->name, y->name) ||
		    config_diff_str(x->sql, y->sql) ||
		    x->has_max_change != y->has_max_change ||
		    (x->has_max_change && x->max_change != y->max_change) ||
		    x->warn != y->warn || x->trend.has != y->trend.has ||
		    (x->trend.has && (x->trend.last != y->trend.last ||
				      x->trend.max_sigma != y->trend.max_sigma ||
				      x->trend.min_history !=
				      y->trend.min_history)))
			return true;
	}
	return false;
}

/* The keys of job a that differ in b, in one fixed order (where and when
 * it runs, what it runs, its guardrails, sensor and deadline): the order
 * `backfillctl reload` reports them in. */
static void
config_diff_job(const struct job_def *a, const struct job_def *b,
		struct config_diff_changed *c)
{
#define CD_IF(cond, key) do { if (cond) config_diff_key(c, key); } while (0)
	CD_IF(config_diff_str(a->warehouse_name, b->warehouse_name), "warehouse");
	CD_IF(a->grain != b->grain, "partition");
	CD_IF(strcmp(cal_zone_name(&a->cal), cal_zone_name(&b->cal)) != 0,
	      "timezone");
	CD_IF(a->cal.week_start != b->cal.week_start, "week_start");
	CD_IF(a->has_start != b->has_start ||
	      (a->has_start && a->start != b->start), "start");
	CD_IF(a->has_end != b->has_end || (a->has_end && a->end != b->end), "end");
	CD_IF(a->ready_after != b->ready_after, "ready_after");
	CD_IF(a->catchup != b->catchup, "catchup");
	CD_IF(a->max_catchup != b->max_catchup, "max_catchup");
	CD_IF(a->max_backfill != b->max_backfill, "max_backfill");
	CD_IF(a->max_backfill_time != b->max_backfill_time,
	      "max_backfill_time");
	CD_IF(a->concurrency != b->concurrency, "concurrency");
	CD_IF(a->retries != b->retries, "retries");
	CD_IF(a->retry_backoff != b->retry_backoff, "retry_backoff");
	CD_IF(a->timeout != b->timeout, "timeout");
	CD_IF(config_diff_str(a->sql, b->sql), "sql");
	CD_IF(config_diff_str(a->sql_file, b->sql_file), "sql_file");
	CD_IF((a->command == NULL) != (b->command == NULL) ||
	      config_diff_strv(a->command, a->command_len, b->command,
			       b->command_len), "command");
	CD_IF(config_diff_checks(a, b), "checks");
	CD_IF(config_diff_strv(a->upstream, a->nupstream, b->upstream,
			       b->nupstream) || config_diff_lookback(a, b) ||
	      a->self_lookback != b->self_lookback,
	      "upstream");
	CD_IF(a->allow_wall_clock != b->allow_wall_clock, "allow_wall_clock");
	CD_IF(a->allow_empty != b->allow_empty, "allow_empty");
	CD_IF(a->batch != b->batch || a->batch_size != b->batch_size, "batch");
	CD_IF(a->verify != b->verify, "verify");
	CD_IF(a->keep_runs != b->keep_runs, "keep_runs");
	CD_IF(config_diff_str(a->table, b->table), "table");
	CD_IF(config_diff_str(a->partition_column, b->partition_column),
	      "partition_column");
	CD_IF(config_diff_strv(a->key, a->nkey, b->key, b->nkey), "key");
	CD_IF(a->min_rows != b->min_rows, "min_rows");
	CD_IF(config_diff_metrics(a, b), "metrics");
	CD_IF((a->late_data == NULL) != (b->late_data == NULL) ||
	      (a->late_data != NULL &&
	       (config_diff_str(a->late_data->sql, b->late_data->sql) ||
		a->late_data->every != b->late_data->every)), "late_data");
	CD_IF(a->deadline != b->deadline, "deadline");
	for (int h = 0; h < HOOK_COUNT; h++)
		CD_IF((a->hooks[h].argv == NULL) != (b->hooks[h].argv == NULL) ||
		      config_diff_strv(a->hooks[h].argv, a->hooks[h].argc,
				       b->hooks[h].argv, b->hooks[h].argc),
		      hook_kind_name((enum hook_kind)h));
	CD_IF(config_diff_strv(a->nodes, a->nnodes, b->nodes, b->nnodes),
	      "nodes");
}

/* The keys of warehouse a that differ in b. */
static void
config_diff_wh(const struct warehouse_def *a, const struct warehouse_def *b,
	       struct config_diff_changed *c)
{
	/* a warehouse that moves from sqlite: to postgres: changes both */
	CD_IF(a->kind != b->kind || config_diff_str(a->path, b->path), "sqlite");
	CD_IF(a->kind != b->kind || config_diff_str(a->conninfo, b->conninfo),
	      "postgres");
	CD_IF(config_diff_str(a->url, b->url), "clickhouse");
	CD_IF(config_diff_str(a->user, b->user), "user");
	CD_IF(config_diff_str(a->password_file, b->password_file),
	      "password_file");
	CD_IF((a->throttle == NULL) != (b->throttle == NULL) ||
	      (a->throttle && (config_diff_str(a->throttle->sql,
					       b->throttle->sql) ||
			       a->throttle->max != b->throttle->max ||
			       a->throttle->has_critical !=
			       b->throttle->has_critical ||
			       a->throttle->critical != b->throttle->critical ||
			       a->throttle->every != b->throttle->every)),
	      "throttle");
	CD_IF((a->on_throttle == NULL) != (b->on_throttle == NULL) ||
	      config_diff_strv(a->on_throttle, a->on_throttle_len,
			       b->on_throttle, b->on_throttle_len),
	      "on_throttle");
	CD_IF(a->max_connections != b->max_connections, "max_connections");
	CD_IF(config_diff_str(a->cluster, b->cluster), "cluster");
	CD_IF(config_diff_strv(a->shards, a->nshards, b->shards, b->nshards),
	      "shards");
}

/* The top-level settings that differ. */
static void
config_diff_settings(const struct config *a, const struct config *b,
		     struct config_diff *d)
{
	struct config_diff_changed cs, *c = &cs;

	memset(c, 0, sizeof *c);
	CD_IF(config_diff_str(a->state_db, b->state_db), "state_db");
	CD_IF(config_diff_str(a->state_conninfo, b->state_conninfo) ||
	      config_diff_str(a->state_password_file, b->state_password_file),
	      "state");
	CD_IF(config_diff_str(a->node, b->node), "node");
	CD_IF(a->lease != b->lease, "lease");
	CD_IF(config_diff_str(a->socket, b->socket), "socket");
	CD_IF(config_diff_str(a->socket_group, b->socket_group), "socket_group");
	CD_IF(config_diff_str(a->log_level, b->log_level), "log_level");
	CD_IF(a->max_concurrency != b->max_concurrency, "max_concurrency");
	CD_IF(a->max_catchup != b->max_catchup, "max_catchup");
	CD_IF(a->max_backfill != b->max_backfill, "max_backfill");
	CD_IF(strcmp(a->zone != NULL ? tz_name(a->zone) : "UTC",
		     b->zone != NULL ? tz_name(b->zone) : "UTC") != 0,
	      "timezone");
	CD_IF(a->build_future != b->build_future, "build_future");
	CD_IF(a->max_backfill_time != b->max_backfill_time,
	      "max_backfill_time");
	CD_IF(a->shutdown_grace != b->shutdown_grace, "shutdown_grace");
	CD_IF(a->keep_runs != b->keep_runs, "keep_runs");
	CD_IF(a->hook_timeout != b->hook_timeout, "hook_timeout");
	CD_IF(a->hook_concurrency != b->hook_concurrency, "hook_concurrency");
	CD_IF(a->hook_queue != b->hook_queue, "hook_queue");
	CD_IF(config_diff_str(a->metrics_file, b->metrics_file), "metrics_file");
	CD_IF(config_diff_str(a->report_file, b->report_file), "report_file");
	CD_IF(config_diff_str(a->http_listen, b->http_listen), "http_listen");
	CD_IF(config_diff_str(a->ol_url, b->ol_url) ||
	      config_diff_str(a->ol_file, b->ol_file) ||
	      config_diff_str(a->ol_namespace, b->ol_namespace) ||
	      a->ol_timeout != b->ol_timeout || a->ol_queue != b->ol_queue,
	      "openlineage");
#undef CD_IF
	memcpy(d->settings, c->keys, sizeof c->keys);
	d->nsettings = c->nkeys;
}

bool
config_diff_needs_restart(const char *setting)
{
	static const char *const restart[] = { "state_db", "state", "node",
					       "socket", "openlineage", NULL };

	for (size_t i = 0; restart[i] != NULL; i++)
		if (strcmp(setting, restart[i]) == 0)
			return true;
	return false;
}

/* Append a copy of name to a list. */
static void
config_diff_push(char ***list, size_t *n, const char *name)
{
	*list = xreallocarray(*list, *n + 1, sizeof **list);
	(*list)[(*n)++] = xstrdup(name);
}

/* Append a changed entry (its keys already found) to a set. */
static void
config_diff_push_changed(struct config_diff_set *set,
			 const struct config_diff_changed *c, const char *name)
{
	set->changed = xreallocarray(set->changed, set->nchanged + 1,
				     sizeof *set->changed);
	set->changed[set->nchanged] = *c;
	set->changed[set->nchanged++].name = xstrdup(name);
}

/* Job `name` of cfg, looked for first at index `hint` (a reload mostly
 * keeps the order, which makes the diff linear), then everywhere. */
static const struct job_def *
config_diff_job_named(const struct config *cfg, const char *name, size_t hint)
{
	if (hint < cfg->njobs && strcmp(cfg->jobs[hint].name, name) == 0)
		return &cfg->jobs[hint];
	return config_job(cfg, name);
}

/* Index of warehouse `name` in cfg, or -1. */
static int
config_diff_wh_index(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nwarehouses; i++)
		if (strcmp(cfg->warehouses[i].name, name) == 0)
			return (int)i;
	return -1;
}

void
config_diff(const struct config *old, const struct config *new_cfg,
	    struct config_diff *d)
{
	struct config_diff_changed c;
	size_t i;
	int k;

	memset(d, 0, sizeof *d);
	config_diff_settings(old, new_cfg, d);
	for (i = 0; i < new_cfg->nwarehouses; i++) {
		const struct warehouse_def *w = &new_cfg->warehouses[i];

		if ((k = config_diff_wh_index(old, w->name)) < 0) {
			config_diff_push(&d->warehouses.added,
					 &d->warehouses.nadded, w->name);
			continue;
		}
		memset(&c, 0, sizeof c);
		config_diff_wh(&old->warehouses[k], w, &c);
		if (c.nkeys > 0)
			config_diff_push_changed(&d->warehouses, &c, w->name);
	}
	for (i = 0; i < old->nwarehouses; i++)
		if (config_diff_wh_index(new_cfg, old->warehouses[i].name) < 0)
			config_diff_push(&d->warehouses.removed,
					 &d->warehouses.nremoved,
					 old->warehouses[i].name);
	for (i = 0; i < new_cfg->njobs; i++) {
		const struct job_def *j = &new_cfg->jobs[i];
		const struct job_def *o = config_diff_job_named(old, j->name, i);

		if (o == NULL) {
			config_diff_push(&d->jobs.added, &d->jobs.nadded,
					 j->name);
			continue;
		}
		memset(&c, 0, sizeof c);
		config_diff_job(o, j, &c);
		if (c.nkeys == 0 &&
		    strcmp(o->code_version, j->code_version) == 0)
			continue;
		memcpy(c.old_code_version, o->code_version,
		       sizeof c.old_code_version);
		memcpy(c.new_code_version, j->code_version,
		       sizeof c.new_code_version);
		config_diff_push_changed(&d->jobs, &c, j->name);
	}
	for (i = 0; i < old->njobs; i++)
		if (config_diff_job_named(new_cfg, old->jobs[i].name, i) == NULL)
			config_diff_push(&d->jobs.removed, &d->jobs.nremoved,
					 old->jobs[i].name);
}

bool
config_diff_empty(const struct config_diff *d)
{
	return d->nsettings == 0 && d->jobs.nadded == 0 &&
	       d->jobs.nremoved == 0 && d->jobs.nchanged == 0 &&
	       d->warehouses.nadded == 0 && d->warehouses.nremoved == 0 &&
	       d->warehouses.nchanged == 0;
}

/* Free one set. */
static void
config_diff_set_free(struct config_diff_set *s)
{
	size_t i;

	for (i = 0; i < s->nadded; i++)
		free(s->added[i]);
	for (i = 0; i < s->nremoved; i++)
		free(s->removed[i]);
	for (i = 0; i < s->nchanged; i++)
		free(s->changed[i].name);
	free(s->added);
	free(s->removed);
	free(s->changed);
}

void
config_diff_free(struct config_diff *d)
{
	config_diff_set_free(&d->jobs);
	config_diff_set_free(&d->warehouses);
	free(d->removed_queued);
	if (d->next != NULL)
		config_unref(d->next);
	memset(d, 0, sizeof *d);
}
