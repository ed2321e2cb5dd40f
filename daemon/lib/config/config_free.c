/*
 * config_free.c - freeing a loaded (or half-loaded) configuration and all
 * it holds.  A field a new key allocates is freed here.
 */
#include "config_int.h"

#include <stdlib.h>

#include "tz.h"

/* Free n strings of v, then v. */
static void
cfg_strv_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Free what a warehouse holds (not the warehouse itself). */
static void
cfg_wh_free(struct warehouse_def *w)
{
	free(w->name);
	free(w->path);
	free(w->conninfo);
	free(w->password_file);
	free(w->cluster);
	cfg_strv_free(w->shards, w->nshards);
	free(w->url);
	free(w->user);
	if (w->throttle)
		free(w->throttle->sql);
	free(w->throttle);
	cfg_strv_free(w->on_throttle, w->on_throttle_len);
	free(w->file);
}

/* Free what a job's checks, reconcile, metrics and late_data hold. */
static void
cfg_job_checks_free(struct job_def *j)
{
	size_t k;

	for (k = 0; k < j->nchecks; k++) {
		free(j->checks[k].name);
		free(j->checks[k].sql);
	}
	free(j->checks);
	for (k = 0; k < j->nreconciles; k++) {
		free(j->reconciles[k].name);
		free(j->reconciles[k].source_warehouse);
		free(j->reconciles[k].source_sql);
		free(j->reconciles[k].target_sql);
	}
	free(j->reconciles);
	for (k = 0; k < j->nmetrics; k++) {
		free(j->metrics[k].name);
		free(j->metrics[k].sql);
	}
	free(j->metrics);
	if (j->late_data != NULL)
		free(j->late_data->sql);
	free(j->late_data);
}

/* Free what a job holds (not the job itself). */
static void
cfg_job_free(struct job_def *j)
{
	free(j->name);
	free(j->file);
	free(j->warehouse_name);
	free(j->sql);
	free(j->sql_file);
	cfg_strv_free(j->command, j->command_len);
	cfg_job_checks_free(j);
	cfg_strv_free(j->upstream, j->nupstream);
	free(j->upstream_idx);
	free(j->upstream_lookback);
	cfg_strv_free(j->reads, j->nreads);
	cfg_strv_free(j->writes, j->nwrites);
	cfg_strv_free(j->reads_ignored, j->nreads_ignored);
	free(j->downstream_idx);
	free(j->table);
	free(j->partition_column);
	cfg_strv_free(j->key, j->nkey);
	cfg_strv_free(j->nodes, j->nnodes);
	tz_unref(j->zone);
	for (int h = 0; h < HOOK_COUNT; h++)
		cfg_strv_free(j->hooks[h].argv, j->hooks[h].argc);
}

/* Free a config and everything it holds. */
void
config_free(struct config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->nwarehouses; i++)
		cfg_wh_free(&cfg->warehouses[i]);
	free(cfg->warehouses);
	for (i = 0; i < cfg->njobs; i++)
		cfg_job_free(&cfg->jobs[i]);
	free(cfg->jobs);
	free(cfg->topo);
	free(cfg->lineage_error);
	free(cfg->path);
	free(cfg->dir);
	free(cfg->state_db);
	free(cfg->state_conninfo);
	free(cfg->state_password_file);
	free(cfg->node);
	free(cfg->socket);
	free(cfg->socket_group);
	free(cfg->log_level);
	free(cfg->metrics_file);
	free(cfg->report_file);
	free(cfg->http_listen);
	free(cfg->ol_url);
	free(cfg->ol_file);
	free(cfg->ol_namespace);
	tz_unref(cfg->zone);
	free(cfg);
}
