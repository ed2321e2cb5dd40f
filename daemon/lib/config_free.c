/*
 * config_free.c - freeing a loaded (or half-loaded) configuration and all it holds.
 */
#include "config_int.h"

#include <stdlib.h>
#include <string.h>

/* Free a config and everything it holds. */
void
config_free(struct config *cfg)
{
	size_t i, k;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->nwarehouses; i++) {
		struct warehouse_def *w = &cfg->warehouses[i];

		free(w->name);
		free(w->path);
		free(w->conninfo);
		free(w->password_file);
		free(w->cluster);
		for (k = 0; k < w->nshards; k++)
			free(w->shards[k]);
		free(w->shards);
		free(w->url);
		free(w->user);
		if (w->throttle)
			free(w->throttle->sql);
		free(w->throttle);
		for (size_t a = 0; a < w->on_throttle_len; a++)
			free(w->on_throttle[a]);
		free(w->on_throttle);
		free(w->file);
	}
	free(cfg->warehouses);
	for (i = 0; i < cfg->njobs; i++) {
		struct job_def *j = &cfg->jobs[i];

		free(j->name);
		free(j->file);
		free(j->warehouse_name);
		free(j->sql);
		free(j->sql_file);
		for (k = 0; k < j->command_len; k++)
			free(j->command[k]);
		free(j->command);
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
		for (k = 0; k < j->nupstream; k++)
			free(j->upstream[k]);
		free(j->upstream);
		free(j->upstream_idx);
		free(j->downstream_idx);
		free(j->table);
		free(j->partition_column);
		for (k = 0; k < j->nkey; k++)
			free(j->key[k]);
		free(j->key);
		for (k = 0; k < j->nmetrics; k++) {
			free(j->metrics[k].name);
			free(j->metrics[k].sql);
		}
		free(j->metrics);
		if (j->late_data != NULL)
			free(j->late_data->sql);
		free(j->late_data);
		for (k = 0; k < j->nnodes; k++)
			free(j->nodes[k]);
		free(j->nodes);
		for (int h = 0; h < HOOK_COUNT; h++) {
			for (k = 0; k < j->hooks[h].argc; k++)
				free(j->hooks[h].argv[k]);
			free(j->hooks[h].argv);
		}
	}
	free(cfg->jobs);
	free(cfg->topo);
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
	free(cfg);
}
