/*
 * config.c - load and validate the configuration file (backfilld.yaml(5);
 * docs/configuration.md, "Configuration"): the entry points, the order of
 * the load's steps, the top-level defaults, references and lookups.
 *
 * The file is loaded with libyaml's document API and walked with one table
 * per mapping (config_int.h lists the files: one per section, each with its
 * table of keys): each row names a key, the node type it expects, what its
 * value must be (for messages), a handler and, for the generic handlers,
 * the offset of the field it fills.  This is netplan's parse.c shape.
 *
 * Every error is one line "FILE:LINE:COLUMN: message" (config_err.c)
 * pointing at the offending key or value, FILE being the path as given.
 * The first error stops the load; nothing half-loaded ever escapes.
 *
 * A job without upstream and without start is allowed: it has no clock
 * schedule, and only operator backfills (bounded by end, if any) run it.
 * A job with upstream needs no start either: it runs when its inputs land.
 */
#include "config_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hookq.h"
#include "xalloc.h"

const struct cfg_table cfg_tables[] = {
	{ "the top level", cfg_top_keys },
	{ "state", cfg_state_keys },
	{ "an included file", cfg_inc_keys },
	{ "warehouse", cfg_wh_keys },
	{ "throttle", cfg_throttle_keys },
	{ "job", cfg_job_keys },
	{ "check", cfg_check_keys },
	{ "reconcile", cfg_recon_keys },
	{ "reconcile source", cfg_recon_source_keys },
	{ "metric", cfg_metric_keys },
	{ "trend", cfg_trend_keys },
	{ "late_data", cfg_late_keys },
	{ "openlineage", cfg_ol_keys },
	{ NULL, NULL }
};

/* Load the main file, every file it includes, and walk them into p->cfg. */
static int
cfg_load_doc(struct cfg_parser *p)
{
	struct config *cfg = p->cfg;
	yaml_node_t *root;
	size_t i;

	cfg_use(p, 0);
	if (cfg_parse_file(p, false) < 0)
		return -1;
	cfg->nfiles = p->nsrcs;
	cfg_use(p, 0);
	root = yaml_document_get_root_node(p->doc);
	if (cfg_state_finish(p, root) < 0)
		return -1;
	if (cfg_load_warehouses(p) < 0 || cfg_load_jobs(p) < 0)
		return -1;
	cfg_use(p, 0);
	root = yaml_document_get_root_node(p->doc);
	/* defaults the top level did not set: only now, after phase 0 */
	if (cfg->socket == NULL)
		cfg->socket = xstrdup(CFG_DEFAULT_SOCKET);
	if (strlen(cfg->socket) >= CFG_SUN_PATH_MAX)
		return cfg_fail(p, cfg_map_get(p, root, "socket")->start_mark,
				"socket path %s is %zu bytes long; a unix socket path has at most %d",
				cfg->socket, strlen(cfg->socket), CFG_SUN_PATH_MAX - 1);
	if (cfg_link(p) < 0 || cfg_lineage(p) < 0)
		return -1;
	for (i = 0; i < cfg->njobs; i++)
		cfg_code_version(&cfg->jobs[i]);
	return 0;
}

/* A configuration holding the top level's defaults, with one reference;
 * abs is the file's absolute path (taken over). */
static struct config *
cfg_new(char *abs)
{
	struct config *cfg = xcalloc(1, sizeof *cfg);

	cfg->refs = 1;
	cfg->path = abs;
	cfg->dir = cfg_dirname(abs);
	cfg->max_concurrency = 4;
	cfg->max_catchup = 31;
	cfg->max_backfill = 366;
	cfg->shutdown_grace = 30;
	cfg->keep_runs = 365 * 86400;
	cfg->hook_timeout = 30;
	cfg->hook_concurrency = HOOKQ_CONCURRENCY_DEFAULT;
	cfg->hook_queue = HOOKQ_QUEUE_DEFAULT;
	cfg->lease = CONFIG_LEASE_DEFAULT;
	return cfg;
}

/* A parser for cfg whose main file is `path` (as given) holding text. */
static void
cfg_parser_init(struct cfg_parser *p, struct config *cfg, const char *path,
		const char *text, size_t len, struct err *err)
{
	struct cfg_src *f;

	memset(p, 0, sizeof *p);
	p->file = path;
	p->src = text;
	p->srclen = len;
	p->err = err;
	p->cfg = cfg;
	p->srcs = xcalloc(1, sizeof *p->srcs);
	f = p->srcs[0] = xcalloc(1, sizeof **p->srcs);
	p->nsrcs = 1;
	f->parent = -1;
	f->file = xstrdup(path);
	f->abs = xstrdup(cfg->path);
	f->dir = xstrdup(cfg->dir);
	f->text = xmalloc(len + 1);
	memcpy(f->text, text, len);
	f->text[len] = '\0';
	f->len = len;
	p->total = len;
}

/* Free what the parser holds (every file's text and document). */
static void
cfg_parser_free(struct cfg_parser *p)
{
	size_t i;

	for (i = 0; i < p->nsrcs; i++)
		cfg_src_free(p->srcs[i]);
	free(p->srcs);
	free(p->job_nodes);
	free(p->job_src);
}

/* Load from bytes; abs is the file's absolute path (taken over). */
static int
config_load_bytes(const char *path, char *abs, const char *text, size_t len,
		  struct config **out, struct err *err)
{
	struct cfg_parser p;
	struct config *cfg = cfg_new(abs);
	int rc;

	*out = NULL;
	cfg_parser_init(&p, cfg, path, text, len, err);
	rc = cfg_load_doc(&p);
	if (rc == 0)
		cfg_file_hashes(&p, text, len);
	cfg_parser_free(&p);
	if (rc < 0) {
		config_free(cfg);
		return -1;
	}
	*out = cfg;
	return 0;
}

int
config_load_string(const char *path, const char *text, size_t len,
		   struct config **out, struct err *err)
{
	return config_load_bytes(path, cfg_abs_path(path, false), text, len,
				 out, err);
}

int
config_load(const char *path, struct config **out, struct err *err)
{
	char *text;
	size_t len;
	int rc;

	*out = NULL;
	if (cfg_read_config(path, &text, &len, err) < 0)
		return -1;
	rc = config_load_bytes(path, cfg_abs_path(path, true), text, len, out,
			       err);
	free(text);
	return rc;
}

struct config *
config_ref(struct config *cfg)
{
	if (cfg != NULL)
		__atomic_add_fetch(&cfg->refs, 1, __ATOMIC_RELAXED);
	return cfg;
}

void
config_unref(struct config *cfg)
{
	if (cfg != NULL && __atomic_sub_fetch(&cfg->refs, 1, __ATOMIC_ACQ_REL) == 0)
		config_free(cfg);
}

bool
config_is_cluster(const struct config *cfg)
{
	return cfg->state_conninfo != NULL;
}

const struct job_def *
config_job(const struct config *cfg, const char *name)
{
	int i = config_job_index(cfg, name);

	return i < 0 ? NULL : &cfg->jobs[i];
}

int
config_job_index(const struct config *cfg, const char *name)
{
	size_t i;

	if (cfg == NULL || name == NULL)
		return -1;
	for (i = 0; i < cfg->njobs; i++)
		if (cfg->jobs[i].name != NULL && strcmp(cfg->jobs[i].name, name) == 0)
			return (int)i;
	return -1;
}
