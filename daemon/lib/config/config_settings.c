/*
 * config_settings.c - the top level's settings (cfg_top_keys: the state
 * store, node, socket, limits, hooks' bounds, the files written) and what
 * an included file may hold (cfg_inc_keys); the state store's rules once
 * the top level is read.
 */
#include "config_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hookq.h"
#include "http.h"
#include "xalloc.h"

/* hook_concurrency (1 to HOOKQ_CONCURRENCY_MAX) or hook_queue (0 to
 * HOOKQ_QUEUE_MAX: each queued hook holds its argv and environment) into
 * an int field (the maximum in off2). */
static int
cfg_h_hookq(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	int64_t v, min = k->off2 == HOOKQ_CONCURRENCY_MAX ? 1 : 0;

	(void)key;
	if (cfg_want_plain(p, k, val) < 0)
		return -1;
	if (!cfg_parse_int64(cfg_text(val), &v) || v < min ||
	    v > (int64_t)k->off2)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, int) = (int)v;
	return 0;
}

/* log_level: one of the syslog names the daemon's log.c knows. */
static int
cfg_h_log_level(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		yaml_node_t *key, yaml_node_t *val)
{
	static const char *const levels[] = { "err", "warning", "notice",
					      "info", "debug", NULL };
	size_t i;

	for (i = 0; levels[i] != NULL; i++)
		if (strcmp(cfg_text(val), levels[i]) == 0)
			return cfg_h_str(p, obj, k, key, val);
	return cfg_bad_value(p, k, val);
}

/* The state store of several hosts (state: postgres:). */
const struct cfg_key cfg_state_keys[] = {
	{ "postgres", YAML_SCALAR_NODE, cfg_h_str,
	  CFG_OFF(config, state_conninfo), 0, "a libpq connection string", 0 },
	{ "password_file", YAML_SCALAR_NODE, cfg_h_path,
	  CFG_OFF(config, state_password_file), 0, "a file path", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* state: the PostgreSQL database that several nodes share. */
static int
cfg_h_state(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	cfg_set_ctx(p, "%s", "state");
	if (cfg_parse_map(p, val, cfg_state_keys, obj) < 0)
		return -1;
	cfg_set_ctx(p, "%s", "");
	if (p->cfg->state_conninfo == NULL)
		return cfg_fail(p, val->start_mark,
				"state needs postgres: CONNINFO (the PostgreSQL"
				" database the nodes share); for one host, use"
				" state_db: PATH instead");
	return 0;
}

/* node: this daemon's name among the nodes. */
static int
cfg_h_node(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	   yaml_node_t *key, yaml_node_t *val)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];
	size_t e;

	if (cfg_want_text(p, k, val) < 0)
		return -1;
	if (!cfg_valid_name(cfg_text(val)))
		return cfg_fail(p, val->start_mark, "node name %s must be "
				CFG_NODE_NAME,
				cfg_quote(cfg_text(val), buf, sizeof buf));
	free(p->cfg->node);
	p->cfg->node = xstrdup(cfg_text(val));
	/* its lines are left out of cluster_hash: each node names itself */
	if (cfg_src_line(p, key->start_mark.line, &p->node_s, &e) &&
	    cfg_src_line(p, val->end_mark.line, &e, &p->node_e))
		return 0;
	p->node_s = p->node_e = 0;
	return 0;
}

/* lease: at least a second (nodes heartbeat every third of it). */
static int
cfg_h_lease(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	if (cfg_h_duration(p, obj, k, key, val) < 0)
		return -1;
	if (*CFG_FIELD(obj, k->off, int64_t) < 1)
		return cfg_bad_value(p, k, val);
	return 0;
}

/* state_db: a path, and where it is (daemon_check_host in main.c). */
static int
cfg_h_state_db(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	       yaml_node_t *key, yaml_node_t *val)
{
	if (cfg_h_path(p, obj, k, key, val) < 0)
		return -1;
	((struct config *)obj)->state_db_pos = cfg_pos(val->start_mark);
	return 0;
}

/* socket_group: a name, and where it is (daemon_check_host in main.c). */
static int
cfg_h_socket_group(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		   yaml_node_t *key, yaml_node_t *val)
{
	if (cfg_h_str(p, obj, k, key, val) < 0)
		return -1;
	((struct config *)obj)->socket_group_pos = cfg_pos(val->start_mark);
	return 0;
}

/* http_listen: PORT, IPV4:PORT or [IPV6]:PORT (http.h). */
static int
cfg_h_http_listen(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		  yaml_node_t *key, yaml_node_t *val)
{
	struct config *cfg = obj;
	char buf[CFG_QUOTE_MAX * 4 + 16];
	const char *why;

	if (cfg_h_str(p, obj, k, key, val) < 0)
		return -1;
	if (http_listen_parse(cfg->http_listen, cfg->http_host,
			      &cfg->http_port, &cfg->http_loopback, &why) < 0)
		return cfg_fail(p, val->start_mark, "%s%s, got %s", p->pfx,
				why, cfg_got(val, buf, sizeof buf));
	return 0;
}

const struct cfg_key cfg_top_keys[] = {
	{ "state_db", YAML_SCALAR_NODE, cfg_h_state_db,
	  CFG_OFF(config, state_db), 0, "a file path", 0 },
	{ "state", YAML_MAPPING_NODE, cfg_h_state, 0, 0,
	  "a mapping with postgres: CONNINFO and optionally password_file:",
	  0 },
	{ "node", YAML_SCALAR_NODE, cfg_h_node, 0, 0, "a node name", 0 },
	{ "lease", YAML_SCALAR_NODE, cfg_h_lease, CFG_OFF(config, lease), 0,
	  CFG_LEASE, 0 },
	{ "socket", YAML_SCALAR_NODE, cfg_h_path, CFG_OFF(config, socket), 0,
	  "a socket path", 0 },
	{ "socket_group", YAML_SCALAR_NODE, cfg_h_socket_group,
	  CFG_OFF(config, socket_group), 0, "a group name", 0 },
	{ "log_level", YAML_SCALAR_NODE, cfg_h_log_level,
	  CFG_OFF(config, log_level), 0,
	  "one of err, warning, notice, info, debug", 0 },
	{ "max_concurrency", YAML_SCALAR_NODE, cfg_h_int,
	  CFG_OFF(config, max_concurrency), 1, CFG_POSINT, 0 },
	{ "max_catchup", YAML_SCALAR_NODE, cfg_h_int,
	  CFG_OFF(config, max_catchup), 1, CFG_POSINT, 0 },
	{ "max_backfill", YAML_SCALAR_NODE, cfg_h_int,
	  CFG_OFF(config, max_backfill), 1, CFG_POSINT, 0 },
	{ "timezone", YAML_SCALAR_NODE, cfg_h_timezone, CFG_OFF(config, zone),
	  0, "an IANA time zone name such as Europe/Berlin", 0 },
	{ "build_future", YAML_SCALAR_NODE, cfg_h_bool,
	  CFG_OFF(config, build_future), 0, "true or false", 0 },
	{ "max_backfill_time", YAML_SCALAR_NODE, cfg_h_duration,
	  CFG_OFF(config, max_backfill_time), 0, CFG_DURATION " (0s: none)",
	  0 },
	{ "shutdown_grace", YAML_SCALAR_NODE, cfg_h_duration,
	  CFG_OFF(config, shutdown_grace), 0, CFG_DURATION, 0 },
	{ "keep_runs", YAML_SCALAR_NODE, cfg_h_keep,
	  CFG_OFF(config, keep_runs), 0, CFG_KEEP, 0 },
	{ "metrics_file", YAML_SCALAR_NODE, cfg_h_path,
	  CFG_OFF(config, metrics_file), 0, "a file path", 0 },
	{ "report_file", YAML_SCALAR_NODE, cfg_h_path,
	  CFG_OFF(config, report_file), 0, "a file path", 0 },
	{ "http_listen", YAML_SCALAR_NODE, cfg_h_http_listen,
	  CFG_OFF(config, http_listen), 0,
	  "PORT, IPV4:PORT or [IPV6]:PORT", 0 },
	{ "openlineage", YAML_MAPPING_NODE, cfg_h_openlineage, 0, 0,
	  "a mapping with url: URL or file: PATH (and namespace:, timeout:,"
	  " queue:)", 0 },
	{ "hook_timeout", YAML_SCALAR_NODE, cfg_h_posduration,
	  CFG_OFF(config, hook_timeout), 0, CFG_POSDURATION, 0 },
	{ "hook_concurrency", YAML_SCALAR_NODE, cfg_h_hookq,
	  CFG_OFF(config, hook_concurrency), HOOKQ_CONCURRENCY_MAX,
	  "an integer from 1 to 1024", 0 },
	{ "hook_queue", YAML_SCALAR_NODE, cfg_h_hookq,
	  CFG_OFF(config, hook_queue), HOOKQ_QUEUE_MAX,
	  "an integer from 0 to 100000", 0 },
	{ "warehouses", YAML_SEQUENCE_NODE, cfg_h_warehouses, 0, 0,
	  "a sequence of warehouses", 1 },
	{ "jobs", YAML_SEQUENCE_NODE, cfg_h_jobs, 0, 0, "a sequence of jobs",
	  2 },
	{ "include", YAML_SEQUENCE_NODE, cfg_h_include, 0, 0,
	  "a sequence of file names or glob patterns (each maybe as optional: PATTERN)", 1 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* An included file: these keys only (settings belong to the main file). */
const struct cfg_key cfg_inc_keys[] = {
	{ "warehouses", YAML_SEQUENCE_NODE, cfg_h_warehouses, 0, 0,
	  "a sequence of warehouses", 0 },
	{ "jobs", YAML_SEQUENCE_NODE, cfg_h_jobs, 0, 0, "a sequence of jobs",
	  0 },
	{ "include", YAML_SEQUENCE_NODE, cfg_h_include, 0, 0,
	  "a sequence of file names or glob patterns (each maybe as optional: PATTERN)", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* This daemon's default node name: the host name, when it is a valid
 * name; "localhost" otherwise (refused later if several hosts need it). */
static char *
cfg_host_name(void)
{
	char host[256];

	if (gethostname(host, sizeof host) < 0 ||
	    memchr(host, '\0', sizeof host) == NULL || !cfg_valid_name(host))
		return NULL;
	return xstrdup(host);
}

/*
 * The state store's rules, once the top level is loaded: state_db and
 * state: are exclusive; lease: is for several hosts; node: defaults to
 * the host name, which must then be a valid name.  state_db defaults to
 * CFG_DEFAULT_STATE_DB when neither is given.
 */
int
cfg_state_finish(struct cfg_parser *p, yaml_node_t *root)
{
	struct config *cfg = p->cfg;
	yaml_node_t *kdb = cfg_map_key(p, root, "state_db");
	yaml_node_t *kst = cfg_map_key(p, root, "state");
	yaml_node_t *kl = cfg_map_key(p, root, "lease");
	char host[256];

	if (kdb != NULL && kst != NULL) {
		yaml_node_t *later = kdb->start_mark.index >
			kst->start_mark.index ? kdb : kst;

		return cfg_fail(p, later->start_mark,
				"state_db and state are exclusive; keep one"
				" (state_db: PATH for one host, state:"
				" postgres: for several)");
	}
	if (kst == NULL && kl != NULL)
		return cfg_fail(p, kl->start_mark, "lease applies to several"
				" hosts: it needs state: postgres: (a state"
				" store the nodes share)");
	if (kst == NULL && cfg->state_db == NULL)
		cfg->state_db = xstrdup(CFG_DEFAULT_STATE_DB);
	if (cfg->node == NULL)
		cfg->node = cfg_host_name();
	if (cfg->node == NULL && kst != NULL) {
		if (gethostname(host, sizeof host) < 0)
			snprintf(host, sizeof host, "%s", strerror(errno));
		host[sizeof host - 1] = '\0';
		return cfg_fail(p, kst->start_mark, "the host name \"%.64s\""
				" is not a valid node name (" CFG_NODE_NAME
				"): set node: NAME", host);
	}
	if (cfg->node == NULL)
		cfg->node = xstrdup("localhost");
	return 0;
}
