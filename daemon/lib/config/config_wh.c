/*
 * config_wh.c - the warehouses: section (cfg_wh_keys) and a warehouse's
 * throttle (cfg_throttle_keys); a warehouse's own rules once its mapping is
 * read.
 */
#include "config_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chsql.h"
#include "xalloc.h"

/* Warehouse name: valid and not used by an earlier warehouse (val is a
 * scalar: the table says so). */
static int
cfg_h_wh_name(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	      yaml_node_t *key, yaml_node_t *val)
{
	struct warehouse_def *w = obj, *o;

	for (o = p->cfg->warehouses; o < w; o++)
		if (strcmp(o->name, cfg_text(val)) == 0)
			break;
	return cfg_take_name(p, k, val, "warehouse", o < w ? &o->pos : NULL,
			     o < w ? o->file : NULL, &w->name);
}

/* sqlite: the database file's path. */
static int
cfg_h_wh_sqlite(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		yaml_node_t *key, yaml_node_t *val)
{
	struct warehouse_def *w = obj;

	w->kind = WH_SQLITE;
	w->path_pos.line = (int)val->start_mark.line + 1;
	w->path_pos.col = (int)val->start_mark.column + 1;
	return cfg_h_path(p, obj, k, key, val);
}

/* postgres: a libpq connection string. */
static int
cfg_h_wh_postgres(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		  yaml_node_t *key, yaml_node_t *val)
{
	((struct warehouse_def *)obj)->kind = WH_POSTGRES;
	return cfg_h_str(p, obj, k, key, val);
}

/* clickhouse: the URL of the server's HTTP interface. */
static int
cfg_h_wh_clickhouse(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		    yaml_node_t *key, yaml_node_t *val)
{
	const char *t = cfg_text(val);

	if (strncmp(t, "http://", 7) != 0 && strncmp(t, "https://", 8) != 0)
		return cfg_bad_value(p, k, val);
	((struct warehouse_def *)obj)->kind = WH_CLICKHOUSE;
	return cfg_h_str(p, obj, k, key, val);
}

/* The throttle's own table. */
const struct cfg_key cfg_throttle_keys[] = {
	{ "sql", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(throttle_def, sql), 0,
	  "SQL text returning one number", 0 },
	{ "max", YAML_SCALAR_NODE, cfg_h_number, CFG_OFF(throttle_def, max),
	  CFG_OFF(throttle_def, has_max), "a number", 0 },
	{ "critical", YAML_SCALAR_NODE, cfg_h_number,
	  CFG_OFF(throttle_def, critical), CFG_OFF(throttle_def, has_critical),
	  "a number", 0 },
	{ "every", YAML_SCALAR_NODE, cfg_h_posduration,
	  CFG_OFF(throttle_def, every), 0,
	  "a positive duration like 5s, 1m", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* throttle: {sql, max, critical, every}: sql and max required, critical
 * not below max, every 5s by default. */
static int
cfg_h_throttle(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	       yaml_node_t *key, yaml_node_t *val)
{
	struct warehouse_def *w = obj;
	struct throttle_def *t;
	char saved[CFG_CTX_MAX];
	int rc;

	(void)k; (void)key;
	t = w->throttle = xcalloc(1, sizeof *w->throttle);
	t->pos = cfg_pos(val->start_mark);
	memcpy(saved, p->ctx, sizeof saved);
	cfg_set_ctx(p, "throttle of %s", saved);
	rc = cfg_parse_map(p, val, cfg_throttle_keys, t);
	if (rc == 0 && (t->sql == NULL || !t->has_max))
		rc = cfg_fail(p, val->start_mark, "%s needs %s", p->ctx,
			      t->sql == NULL && !t->has_max ? "sql: and max:" :
			      t->sql == NULL ? "sql:" : "max:");
	if (rc == 0 && t->has_critical && t->critical < t->max)
		rc = cfg_fail(p, cfg_map_get(p, val, "critical")->start_mark,
			      "%s: critical %g is below max %g; raise it (or"
			      " drop it)", p->ctx, t->critical, t->max);
	if (t->every == 0)
		t->every = 5;
	cfg_restore_ctx(p, saved);
	return rc;
}

/* on_throttle: a hook's argv, a non-empty sequence of strings. */
static int
cfg_h_wh_argv(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	      yaml_node_t *key, yaml_node_t *val)
{
	struct warehouse_def *w = obj;

	(void)key;
	return cfg_take_argv(p, k, val, NULL, &w->on_throttle,
			     &w->on_throttle_len);
}

const struct cfg_key cfg_wh_keys[] = {
	{ "name", YAML_SCALAR_NODE, cfg_h_wh_name, 0, 0, "a name", 0 },
	{ "sqlite", YAML_SCALAR_NODE, cfg_h_wh_sqlite,
	  CFG_OFF(warehouse_def, path), 0, "a database file path", 0 },
	{ "postgres", YAML_SCALAR_NODE, cfg_h_wh_postgres,
	  CFG_OFF(warehouse_def, conninfo), 0, "a libpq connection string", 0 },
	{ "clickhouse", YAML_SCALAR_NODE, cfg_h_wh_clickhouse,
	  CFG_OFF(warehouse_def, url), 0,
	  "the URL of the HTTP interface (http://HOST:8123/?database=DB)", 0 },
	{ "user", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(warehouse_def, user), 0,
	  "a user name", 0 },
	{ "password_file", YAML_SCALAR_NODE, cfg_h_path,
	  CFG_OFF(warehouse_def, password_file), 0, "a file path", 0 },
	{ "max_connections", YAML_SCALAR_NODE, cfg_h_int,
	  CFG_OFF(warehouse_def, max_connections), 1, CFG_POSINT, 0 },
	{ "throttle", YAML_MAPPING_NODE, cfg_h_throttle, 0, 0,
	  "a mapping with sql:, max: and optionally critical: and every:", 0 },
	{ "cluster", YAML_SCALAR_NODE, cfg_h_str,
	  CFG_OFF(warehouse_def, cluster), 0,
	  "the name of a remote_servers cluster", 0 },
	{ "shards", YAML_SEQUENCE_NODE, cfg_h_strseq,
	  CFG_OFF(warehouse_def, shards), CFG_OFF(warehouse_def, nshards),
	  "a non-empty sequence of URLs, one per shard in shard_num order", 0 },
	{ "on_throttle", YAML_SEQUENCE_NODE, cfg_h_wh_argv, 0, 0,
	  "a non-empty sequence of strings (argv, no shell)", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* cluster: and shards: (ClickHouse only; shards: needs cluster:, each an
 * http(s) URL; docs/clickhouse.md, "Beyond one server"). */
static int
cfg_wh_cluster(struct cfg_parser *p, struct warehouse_def *w, yaml_node_t *map,
	       yaml_node_t *kc)
{
	yaml_node_t *kcl = cfg_map_key(p, map, "cluster");
	yaml_node_t *ksh = cfg_map_key(p, map, "shards");

	if (kcl != NULL && kc == NULL)
		return cfg_fail(p, kcl->start_mark, "%scluster is for clickhouse"
				" warehouses only", p->pfx);
	if (ksh != NULL && kcl == NULL)
		return cfg_fail(p, ksh->start_mark, "%sshards needs cluster: (the"
				" remote_servers cluster they are the shards"
				" of)", p->pfx);
	if (w->cluster != NULL && !chsql_ident_ok(w->cluster))
		return cfg_fail(p, kcl->start_mark, "%scluster must be a plain"
				" name ([A-Za-z_][A-Za-z0-9_]*), got \"%.60s\"",
				p->pfx, w->cluster);
	for (size_t i = 0; i < w->nshards; i++)
		if (strncmp(w->shards[i], "http://", 7) != 0 &&
		    strncmp(w->shards[i], "https://", 8) != 0)
			return cfg_fail(p, ksh->start_mark, "%sshard %zu is not"
					" an http:// or https:// URL: \"%.60s\"",
					p->pfx, i + 1, w->shards[i]);
	return 0;
}

/* A warehouse's own rules, once its mapping is loaded. */
static int
cfg_wh_finish(struct cfg_parser *p, struct warehouse_def *w, yaml_node_t *map)
{
	yaml_node_t *ks = cfg_map_key(p, map, "sqlite");
	yaml_node_t *kp = cfg_map_key(p, map, "postgres");
	yaml_node_t *kpw = cfg_map_key(p, map, "password_file");
	yaml_node_t *kc = cfg_map_key(p, map, "clickhouse");
	yaml_node_t *ku = cfg_map_key(p, map, "user");

	if (ks == NULL && kp == NULL && kc == NULL)
		return cfg_fail(p, map->start_mark,
				"%s needs sqlite: PATH, postgres: CONNINFO or"
				" clickhouse: URL", p->ctx);
	if ((ks != NULL) + (kp != NULL) + (kc != NULL) > 1) {
		yaml_node_t *later = ks != NULL && kp != NULL ?
			(ks->start_mark.index > kp->start_mark.index ? ks : kp) :
			(ks != NULL ? ks : kp);

		if (kc != NULL && kc->start_mark.index > later->start_mark.index)
			later = kc;
		return cfg_fail(p, later->start_mark,
				"%ssqlite, postgres and clickhouse are exclusive;"
				" keep one", p->pfx);
	}
	if (ku != NULL && kc == NULL)
		return cfg_fail(p, ku->start_mark,
				"%suser is for clickhouse warehouses only"
				" (postgres: the user goes in the CONNINFO)",
				p->pfx);
	if (ks != NULL && kpw != NULL)
		return cfg_fail(p, kpw->start_mark,
				"%spassword_file is for postgres and clickhouse warehouses only",
				p->pfx);
	if (cfg_wh_cluster(p, w, map, kc) < 0)
		return -1;
	if (w->on_throttle != NULL && w->throttle == NULL)
		return cfg_fail(p, cfg_map_key(p, map, "on_throttle")->start_mark,
				"%son_throttle needs throttle: (the query whose"
				" value it reports)", p->pfx);
	if (w->max_connections == 0)
		w->max_connections = p->cfg->max_concurrency < 4 ?
					     p->cfg->max_concurrency : 4;
	return 0;
}

/* warehouses: a sequence, taken in when every file is read. */
int
cfg_h_warehouses(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		 yaml_node_t *key, yaml_node_t *val)
{
	p->srcs[p->cur]->wh = val;
	return 0;
}

/* The warehouses of every file, in load order. */
int
cfg_load_warehouses(struct cfg_parser *p)
{
	struct config *cfg = p->cfg;
	size_t f, i, n = 0;

	for (f = 0; f < p->nsrcs; f++)
		if (p->srcs[f]->wh != NULL)
			n += cfg_seq_len(p->srcs[f]->wh);
	if (n == 0)
		return 0;
	cfg->warehouses = xcalloc(n, sizeof *cfg->warehouses);
	for (f = 0; f < p->nsrcs; f++) {
		yaml_node_t *val = p->srcs[f]->wh;

		if (val == NULL)
			continue;
		cfg_use(p, f);
		for (i = 0; i < cfg_seq_len(val); i++) {
			struct warehouse_def *w = &cfg->warehouses[cfg->nwarehouses++];
			yaml_node_t *it = cfg_seq_item(p, val, i);

			w->file = xstrdup(p->srcs[f]->abs);
			if (cfg_item_begin(p, it, i, "warehouse",
					   "name: and sqlite: or postgres:",
					   &w->pos) < 0 ||
			    cfg_parse_map(p, it, cfg_wh_keys, w) < 0 ||
			    cfg_wh_finish(p, w, it) < 0)
				return -1;
			cfg_set_ctx(p, "%s", "");
		}
	}
	return 0;
}

/* "warehouses are: a, b" (or "no warehouses are defined") into buf. */
const char *
cfg_wh_list(const struct config *cfg, char *buf, size_t n)
{
	size_t i, o;

	if (cfg->nwarehouses == 0)
		return "no warehouses are defined";
	o = (size_t)snprintf(buf, n, "warehouses are: ");
	for (i = 0; i < cfg->nwarehouses && o < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "",
				      cfg->warehouses[i].name);
	return buf;
}

int
config_wh_sqlite_header(const char *path, char *why, size_t n)
{
	static const char magic[16] = "SQLite format 3"; /* and its NUL */
	char head[sizeof magic];
	struct stat st;
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(why, n, "it is not a regular file");
		return -1;
	}
	do
		r = pread(fd, head, sizeof head, 0);
	while (r < 0 && errno == EINTR);
	close(fd);
	if (r == 0 && st.st_size == 0)
		return 0; /* an empty file is an empty database */
	if (r == (ssize_t)sizeof head && memcmp(head, magic, sizeof magic) == 0)
		return 0;
	if (r < 0)
		return 0;
	snprintf(why, n, "it is not an SQLite database (%jd bytes that do not"
		 " start with SQLite's header)", (intmax_t)st.st_size);
	return -1;
}
