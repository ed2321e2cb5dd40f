/*
 * config_int.h - what the files of the configuration loader share
 * (config.h is the public interface; nothing outside daemon/lib/config*.c
 * includes this, except tests/unit/test_config.c, which reads the key
 * tables).
 *
 * The loader, one file per concern:
 *   config.c           entry points: load a file or a string (the order of
 *                      the steps), references, lookups
 *   config_yaml.c      YAML into libyaml's node tree, the walk of a mapping
 *                      through its table of keys (cfg_parse_map)
 *   config_err.c       errors and their positions ("FILE:LINE:COL: ...")
 *   config_value.c     the generic handlers a table row names (string,
 *                      path, integer, duration, boolean, argv, ...)
 *   config_file.c      reading files, resolving paths, include:
 *   config_settings.c  the top level's keys (cfg_top_keys), state:
 *   config_wh.c        warehouses: and throttle:
 *   config_job.c       jobs: (cfg_job_keys), hooks, a job's own rules
 *   config_checks.c    checks:, reconcile:, metrics: and trend:, late_data:
 *   config_sql.c       the scan of a job's SQL (wall clock, transactions)
 *   config_graph.c     the upstream graph: names, grains, cycles, order
 *   config_lineage.c   lineage from the SQL: reads, writes, reads_ignored,
 *                      undeclared reads (config->lineage_error)
 *   config_hash.c      code_version, file_hash, cluster_hash
 *   config_free.c      freeing a configuration
 *   config_socket.c    config_socket: the socket path alone, for backfillctl
 *   config_diff.c      what a reload changes (config_diff.h)
 *
 * Adding a key to a mapping: a field in config.h's struct, one row in the
 * mapping's table (key, node type, handler, field offset, what its value
 * must be) and, unless a generic handler of config_value.c fits, its
 * handler beside the table (docs/architecture.md, "Adding a configuration
 * key").
 *
 * Order of checks, which decides which error a broken file reports:
 *   CONFIG-1. a mapping's keys (unknown, duplicate) before any of its values;
 *   CONFIG-2. at the top level, scalar settings (phase 0), then warehouses and
 *      include (phase 1), then jobs (phase 2); warehouses and jobs are
 *      taken in once every file is read (cfg_load_warehouses,
 *      cfg_load_jobs), so a job sees the final defaults and the warehouse
 *      names whatever order the files use;
 *   CONFIG-3. a job's own rules (one of sql/sql_file/command, start <= end,
 *      concurrency <= max_concurrency, wall clock, ...) when its mapping is
 *      done;
 *   CONFIG-4. the rules between jobs (upstream names, grains, cycles) once
 *      every job is in; then the derived data (downstream, topo, code_version).
 */
#ifndef BACKFILLD_CONFIG_INT_H
#define BACKFILLD_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "config.h"

#define CFG_FILE_MAX (4 * 1024 * 1024)  /* the configuration file, at most */
#define CFG_SQL_FILE_MAX (1024 * 1024)  /* each sql_file, at most */
#define CFG_DEPTH_MAX 64                /* YAML nesting, at most */
#define CFG_NAME_MAX 64                  /* job and warehouse names */
#define CFG_CTX_MAX 256
#define CFG_QUOTE_MAX 64                 /* user text quoted in messages */
#define CFG_SUN_PATH_MAX 108             /* sizeof sockaddr_un.sun_path */

#define CFG_DEFAULT_STATE_DB "/var/lib/backfilld/state.db"
#define CFG_DEFAULT_SOCKET "/run/backfilld/backfilld.sock"

/*
 * One file of the configuration: the main file or one it includes.  Every
 * file's document stays loaded until the load ends, so that an error found
 * late (an upstream cycle, a duplicate name) still points into it.
 */
struct cfg_src {
	char *file;   /* for messages: the path as given (main), else absolute */
	char *abs;    /* absolute path: job_def.file, cycles, duplicates */
	char *dir;    /* its folder: relative paths in it resolve here */
	char *text;
	size_t len;
	yaml_document_t doc;
	bool has_doc;
	int parent;   /* index of the including file, -1 for the main one */
	int depth;    /* 0 for the main file */
	yaml_node_t *inc_node; /* the include: entry that named it */
	yaml_node_t *wh;    /* its warehouses: sequence, or NULL */
	yaml_node_t *jobs;  /* its jobs: sequence, or NULL */
};

/* Where we are: the document, the config being filled, the message context. */
struct cfg_parser {
	const char *file;   /* path as given, for messages */
	const char *src;    /* the file's bytes */
	size_t srclen;
	yaml_document_t *doc;
	const char *dir;    /* folder of the current file */
	struct cfg_src **srcs; /* every file read, main first, in load order */
	size_t nsrcs;
	size_t cur;         /* index of the current file */
	size_t total;       /* bytes of YAML read */
	size_t *job_src;    /* file of each job */
	struct config *cfg;
	struct err *err;
	char ctx[CFG_CTX_MAX]; /* "job \"x\"", or "" at the top level */
	char pfx[CFG_CTX_MAX + 2]; /* ctx + ": ", or "" */
	size_t cur_job;        /* index of the job being loaded */
	yaml_node_t **job_nodes; /* mapping node of each job */
	size_t node_s, node_e;   /* main file bytes of node:, left out of
				  * cluster_hash (node_e 0: none) */
};

struct cfg_key;

/* A key's handler: fill obj from the value node val (key is its key). */
typedef int cfg_handler_fn(struct cfg_parser *p, void *obj,
			   const struct cfg_key *k, yaml_node_t *key,
			   yaml_node_t *val);

/* One row of a mapping's table; a table ends with a row whose name is
 * NULL.  Unknown keys and their "did you mean" come from the table. */
struct cfg_key {
	const char *name;
	yaml_node_type_t type; /* expected node type; YAML_NO_NODE: any */
	cfg_handler_fn *fn;
	size_t off;            /* field filled by a generic handler */
	size_t off2;           /* its count, for sequences */
	const char *what;      /* "a positive integer": what the value must be */
	int phase;             /* handled in increasing phase order */
};

/* Every mapping's table, by the name of what it describes. */
struct cfg_table {
	const char *name;
	const struct cfg_key *keys;
};

#define CFG_FIELD(obj, off, type) ((type *)(void *)((char *)(obj) + (off)))

#define CFG_OFF(type, field) offsetof(struct type, field)
#define CFG_POSINT "a positive integer"
#define CFG_DURATION "a duration like 30s, 15m, 2h or 1d"
#define CFG_POSDURATION "a positive duration like 30s, 15m, 2h or 1d"
#define CFG_KEEP "a duration of at least 1h, like 30d or 365d"
#define CFG_LEASE "a duration of at least 1s, like 10s"
#define CFG_LOOKBACK_MAX 1000 /* upstream: {job, lookback}: at most */
#define CFG_NODE_NAME "1 to 64 letters, digits, '_', '-' or '.', not" \
	" starting with '-' or '.'"

/* The tables (NULL-terminated, cfg_tables too). */
extern const struct cfg_key cfg_top_keys[], cfg_inc_keys[], cfg_state_keys[];
extern const struct cfg_key cfg_wh_keys[], cfg_throttle_keys[];
extern const struct cfg_key cfg_job_keys[];
extern const struct cfg_key cfg_check_keys[], cfg_recon_keys[],
	cfg_recon_source_keys[], cfg_metric_keys[], cfg_trend_keys[],
	cfg_late_keys[], cfg_ol_keys[];
extern const struct cfg_table cfg_tables[];

/* config_err.c: messages and positions */
const char *cfg_quote(const char *s, char *buf, size_t n);
const char *cfg_quote_n(const char *s, size_t len, char *buf, size_t n);
int cfg_fail_at(struct cfg_parser *p, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int cfg_fail(struct cfg_parser *p, yaml_mark_t m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void cfg_set_ctx(struct cfg_parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void cfg_restore_ctx(struct cfg_parser *p, const char *saved);
const char *cfg_got(const yaml_node_t *n, char *buf, size_t len);
int cfg_bad_value(struct cfg_parser *p, const struct cfg_key *k,
		  yaml_node_t *val);
int cfg_unknown_key(struct cfg_parser *p, yaml_node_t *kn,
		    const struct cfg_key *table);
void cfg_text_pos(const char *text, size_t off, int *line, int *col);
bool cfg_src_line(struct cfg_parser *p, size_t line, size_t *s, size_t *e);
void cfg_scalar_pos(struct cfg_parser *p, const yaml_node_t *n, size_t off,
		    int *line, int *col);
int cfg_yaml_error(struct cfg_parser *p, const yaml_parser_t *yp);

/* config_yaml.c: nodes, and the walk of a mapping through its table */
yaml_node_t *cfg_node(struct cfg_parser *p, int i);
const char *cfg_text(const yaml_node_t *n);
bool cfg_is_null(const yaml_node_t *n);
size_t cfg_seq_len(const yaml_node_t *n);
yaml_node_t *cfg_seq_item(struct cfg_parser *p, const yaml_node_t *n,
			  size_t i);
yaml_node_t *cfg_map_get(struct cfg_parser *p, const yaml_node_t *map,
			 const char *name);
yaml_node_t *cfg_map_key(struct cfg_parser *p, const yaml_node_t *map,
			 const char *name);
struct pos cfg_pos(yaml_mark_t m);
int cfg_check_dups(struct cfg_parser *p, const yaml_node_t *map);
int cfg_parse_map(struct cfg_parser *p, yaml_node_t *map,
		  const struct cfg_key *table, void *obj);
int cfg_item_begin(struct cfg_parser *p, yaml_node_t *it, size_t i,
		   const char *what, const char *needs, struct pos *pos);
yaml_node_t *cfg_item_ctx(struct cfg_parser *p, yaml_node_t *it,
			  const char *kind, size_t i, const char *saved);
yaml_node_t *cfg_second_key(struct cfg_parser *p, const yaml_node_t *map,
			    const char *const *names, const char **first);
void cfg_use(struct cfg_parser *p, size_t i);
int cfg_parse_file(struct cfg_parser *p, bool included);

/* config_value.c: value parsers and the generic handlers */
bool cfg_decimal(const char *s, bool frac);
bool cfg_parse_int64(const char *s, int64_t *out);
int cfg_want_plain(struct cfg_parser *p, const struct cfg_key *k,
		   yaml_node_t *val);
bool cfg_real(const char *t, double *v);
bool cfg_valid_name(const char *s);
int cfg_want_text(struct cfg_parser *p, const struct cfg_key *k,
		  yaml_node_t *val);
int cfg_take_name(struct cfg_parser *p, const struct cfg_key *k,
		  yaml_node_t *val, const char *what, const struct pos *dup,
		  const char *dupfile, char **name);
int cfg_take_argv(struct cfg_parser *p, const struct cfg_key *k,
		  yaml_node_t *val,
		  int (*ok)(struct cfg_parser *, const struct cfg_key *,
			    yaml_node_t *), char ***argv, size_t *argc);
cfg_handler_fn cfg_h_str, cfg_h_path, cfg_h_int, cfg_h_int64,
	cfg_h_duration, cfg_h_posduration, cfg_h_keep, cfg_h_bool,
	cfg_h_number, cfg_h_strseq, cfg_h_severity, cfg_h_later;

/* config_file.c: files, paths, include: */
char *cfg_resolve(const char *dir, const char *rel);
char *cfg_abs_path(const char *path, bool use_realpath);
char *cfg_dirname(const char *abs);
/* The configuration file at path read whole (config_load and
 * config_socket): 0, or -1 with err's one line (EXIT_BAD_INPUT). */
int cfg_read_config(const char *path, char **buf, size_t *len,
		    struct err *err);
int cfg_read_file(const char *path, size_t max, char **buf, size_t *len,
		  char *why, size_t whysz);
void cfg_src_free(struct cfg_src *f);
cfg_handler_fn cfg_h_include;
/* config_ol.c: openlineage: */
cfg_handler_fn cfg_h_openlineage;

/* config_settings.c: the top level */
int cfg_state_finish(struct cfg_parser *p, yaml_node_t *root);

/* config_wh.c: warehouses */
cfg_handler_fn cfg_h_warehouses;
int cfg_load_warehouses(struct cfg_parser *p);
const char *cfg_wh_list(const struct config *cfg, char *buf, size_t n);

/* config_job.c: jobs */
cfg_handler_fn cfg_h_jobs;
int cfg_load_jobs(struct cfg_parser *p);

/* config_checks.c: checks, reconcile, metrics, late_data */
cfg_handler_fn cfg_h_checks, cfg_h_reconcile, cfg_h_metrics,
	cfg_h_late_data;

/* config_cal.c: timezone:, week_start:, a job's calendar */
cfg_handler_fn cfg_h_timezone, cfg_h_week_start;
int cfg_job_calendar(struct cfg_parser *p, struct job_def *j,
		     yaml_node_t *map);

/* config_sql.c: the scan of a job's SQL */
int cfg_job_clock(struct cfg_parser *p, struct job_def *j, yaml_node_t *map);
int cfg_job_txn(struct cfg_parser *p, struct job_def *j, yaml_node_t *map);

/* config_graph.c: the upstream graph */
int cfg_link(struct cfg_parser *p);

/* config_lineage.c: reads and writes from the SQL, undeclared reads */
int cfg_lineage(struct cfg_parser *p);

/* config_hash.c: hashes */
void cfg_code_version(struct job_def *j);
void cfg_file_hashes(struct cfg_parser *p, const char *text, size_t len);

/* config_free.c */
void config_free(struct config *cfg);

#endif
