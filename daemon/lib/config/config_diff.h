/*
 * config_diff.h - what a reload changes: the differences between two
 * loaded configurations, as data (jobs and warehouses added, removed and
 * changed with the keys that changed, top-level settings changed).  Pure:
 * no I/O; cmd.c renders it for `backfillctl reload` and the log.
 */
#ifndef BACKFILLD_CONFIG_DIFF_H
#define BACKFILLD_CONFIG_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define CONFIG_DIFF_KEYS_MAX 40 /* more than a job has keys */

/* One job or warehouse present in both, with the keys whose effective
 * values differ (YAML key names, static strings, in table order). */
struct config_diff_changed {
	char *name;
	char old_code_version[17]; /* jobs only; "" for warehouses */
	char new_code_version[17];
	const char *keys[CONFIG_DIFF_KEYS_MAX];
	size_t nkeys;
};

/* Names added (in the new order), removed (in the old order), changed. */
struct config_diff_set {
	char **added;
	size_t nadded;
	char **removed;
	size_t nremoved;
	struct config_diff_changed *changed;
	size_t nchanged;
};

struct config_diff {
	struct config_diff_set jobs;
	struct config_diff_set warehouses;
	const char *settings[CONFIG_DIFF_KEYS_MAX]; /* top-level keys changed */
	size_t nsettings;
	/* Filled by the daemon's reload, not by config_diff: per removed job
	 * (jobs.removed's order), its queued partitions that the reload
	 * cancels (NULL: none counted); and, for a dry run, the file's
	 * configuration (a reference), whose settings judge what the report
	 * proposes (NULL: the running one's).  config_diff_free frees both. */
	int64_t *removed_queued;
	struct config *next;
};

/* Fill *d with what changes from old to new (both loaded configurations);
 * free it with config_diff_free.  Cost: linear in the jobs when their
 * order is kept, plus a name lookup (linear) for each job that moved. */
void config_diff(const struct config *old, const struct config *new_cfg,
		struct config_diff *d);
/* True when a changed top-level setting (a key of config_diff.settings)
 * takes effect only when the daemon restarts: the state store, the node's
 * name, the socket. */
bool config_diff_needs_restart(const char *setting);
/* True when nothing differs. */
bool config_diff_empty(const struct config_diff *d);
/* Free what config_diff allocated; *d is empty afterwards. */
void config_diff_free(struct config_diff *d);

#endif
