/*
 * config.c - load and validate the configuration file (backfilld.yaml(5);
 * docs/configuration.md, "Configuration").
 *
 * The file is loaded with libyaml's document API and walked with one table
 * per mapping (top level, warehouse, job, check, metric, late_data): each
 * row names a key, the node type it expects, what its value must be (for
 * messages), a handler and, for the generic handlers, the offset of the
 * field it fills.  This is netplan's parse.c shape.
 *
 * Every error is one line "FILE:LINE:COLUMN: message" (libyaml marks are
 * 0-based: we add 1) pointing at the offending key or value, FILE being the
 * path as given.  The first error stops the load; nothing half-loaded ever
 * escapes.
 *
 * Order of checks, which decides which error a broken file reports:
 *   1. a mapping's keys (unknown, duplicate) before any of its values;
 *   2. at the top level, scalar settings, then warehouses, then jobs, so a
 *      job sees the final defaults and the warehouse names whatever order
 *      the file uses;
 *   3. a job's own rules (one of sql/sql_file/command, start <= end,
 *      concurrency <= max_concurrency, wall clock, ...) when its mapping is
 *      done;
 *   4. the rules between jobs (upstream names, grains, cycles) once every
 *      job is in; then the derived data (downstream, topo, code_version).
 *
 * A job without upstream and without start is allowed: it has no clock
 * schedule, and only operator backfills (bounded by end, if any) run it.
 * A job with upstream needs no start either: it runs when its inputs land.
 */
#include "config.h"
#include "suggest.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "hookq.h"
#include "http.h"
#include "severity.h"
#include "sqlscan.h"
#include "trend.h"
#include "chsql.h"
#include "xalloc.h"

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

/* One row of a mapping's table. */
struct cfg_key {
	const char *name;
	yaml_node_type_t type; /* expected node type; YAML_NO_NODE: any */
	cfg_handler_fn *fn;
	size_t off;            /* field filled by a generic handler */
	size_t off2;           /* its count, for sequences */
	const char *what;      /* "a positive integer": what the value must be */
	int phase;             /* handled in increasing phase order */
};

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

/* Quote user text for a message: "...", escaped, one line, truncated. */
static const char *
cfg_quote(const char *s, char *buf, size_t n)
{
	size_t o = 0, i;

	if (n < 8)
		return "";
	buf[o++] = '"';
	for (i = 0; s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];

		if (o + 8 >= n || i >= CFG_QUOTE_MAX) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += text_escape_byte(c, buf + o); /* the one rule */
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/* Fail the load: "FILE:LINE:COL: message", 1-based position. */
static int
cfg_vfail_at(struct cfg_parser *p, int line, int col, const char *fmt,
	     va_list ap)
{
	char msg[ERR_MSG_MAX];
	char *c;

	vsnprintf(msg, sizeof msg, fmt, ap);
	for (c = msg; *c != '\0'; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	return err_set(p->err, EXIT_BAD_INPUT, "%s:%d:%d: %s", p->file, line,
		       col, msg);
}

/* Fail the load at a 1-based line and column. */
static int __attribute__((format(printf, 4, 5)))
cfg_fail_at(struct cfg_parser *p, int line, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_vfail_at(p, line, col, fmt, ap);
	va_end(ap);
	return -1;
}

/* Fail the load at a libyaml mark (0-based). */
static int __attribute__((format(printf, 3, 4)))
cfg_fail(struct cfg_parser *p, yaml_mark_t m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_vfail_at(p, (int)m.line + 1, (int)m.column + 1, fmt, ap);
	va_end(ap);
	return -1;
}

/* Set the message context ("job \"x\"") and its prefix ("job \"x\": "). */
static void __attribute__((format(printf, 2, 3)))
cfg_set_ctx(struct cfg_parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->ctx, sizeof p->ctx, fmt, ap);
	va_end(ap);
	if (p->ctx[0] != '\0')
		snprintf(p->pfx, sizeof p->pfx, "%s: ", p->ctx);
	else
		p->pfx[0] = '\0';
}

/* Restore a context saved from p->ctx. */
static void
cfg_restore_ctx(struct cfg_parser *p, const char *saved)
{
	cfg_set_ctx(p, "%s", saved);
}

/* ------------------------------------------------------------------ */
/* Nodes                                                               */
/* ------------------------------------------------------------------ */

/* The node with index i of the document. */
static yaml_node_t *
cfg_node(struct cfg_parser *p, int i)
{
	return yaml_document_get_node(p->doc, i);
}

/* A scalar node's text. */
static const char *
cfg_text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* True for a plain scalar meaning null: empty, "~" or "null". */
static bool
cfg_is_null(const yaml_node_t *n)
{
	const char *s;

	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	s = cfg_text(n);
	return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	       strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

/* Describe what a node holds, for "got ..." in messages. */
static const char *
cfg_got(const yaml_node_t *n, char *buf, size_t len)
{
	switch (n->type) {
	case YAML_SEQUENCE_NODE:
		return n->data.sequence.items.top == n->data.sequence.items.start ?
			       "an empty sequence" : "a sequence";
	case YAML_MAPPING_NODE:
		return n->data.mapping.pairs.top == n->data.mapping.pairs.start ?
			       "an empty mapping" : "a mapping";
	case YAML_SCALAR_NODE:
		if (cfg_is_null(n))
			return "nothing";
		return cfg_quote(cfg_text(n), buf, len);
	default:
		return "nothing";
	}
}

/* Number of items of a sequence node. */
static size_t
cfg_seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top -
			n->data.sequence.items.start);
}

/* Item i of a sequence node. */
static yaml_node_t *
cfg_seq_item(struct cfg_parser *p, const yaml_node_t *n, size_t i)
{
	return cfg_node(p, n->data.sequence.items.start[i]);
}

/* The first pair of mapping node map whose key is `name`, or NULL. */
static yaml_node_pair_t *
cfg_map_pair(struct cfg_parser *p, const yaml_node_t *map, const char *name)
{
	yaml_node_pair_t *pr;

	for (pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = cfg_node(p, pr->key);

		if (k->type == YAML_SCALAR_NODE && strcmp(cfg_text(k), name) == 0)
			return pr;
	}
	return NULL;
}

/* The value of key `name` in mapping node map, or NULL. */
static yaml_node_t *
cfg_map_get(struct cfg_parser *p, const yaml_node_t *map, const char *name)
{
	yaml_node_pair_t *pr = cfg_map_pair(p, map, name);

	return pr != NULL ? cfg_node(p, pr->value) : NULL;
}

/* The key node of key `name` in mapping node map, or NULL. */
static yaml_node_t *
cfg_map_key(struct cfg_parser *p, const yaml_node_t *map, const char *name)
{
	yaml_node_pair_t *pr = cfg_map_pair(p, map, name);

	return pr != NULL ? cfg_node(p, pr->key) : NULL;
}

/* Convert a libyaml mark to a 1-based position. */
static struct pos
cfg_pos(yaml_mark_t m)
{
	struct pos pos = { (int)m.line + 1, (int)m.column + 1 };

	return pos;
}

/* Refuse a value of the wrong shape: "KEY must be WHAT, got ...". */
static int
cfg_bad_value(struct cfg_parser *p, const struct cfg_key *k, yaml_node_t *val)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];

	return cfg_fail(p, val->start_mark, "%s%s must be %s, got %s", p->pfx,
			k->name, k->what, cfg_got(val, buf, sizeof buf));
}

/* Check that a mapping's keys are names and none is given twice. */
static int
cfg_check_dups(struct cfg_parser *p, const yaml_node_t *map)
{
	yaml_node_pair_t *pr, *q;
	char buf[CFG_QUOTE_MAX * 4 + 16];

	for (pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = cfg_node(p, pr->key);

		if (k->type != YAML_SCALAR_NODE || cfg_is_null(k))
			return cfg_fail(p, k->start_mark,
					"%skeys must be names, got %s", p->pfx,
					cfg_got(k, buf, sizeof buf));
		for (q = map->data.mapping.pairs.start; q < pr; q++) {
			yaml_node_t *k0 = cfg_node(p, q->key);

			if (strcmp(cfg_text(k0), cfg_text(k)) == 0)
				return cfg_fail(p, k->start_mark,
						"duplicate key %s%s%s (first at line %zu); keep one",
						cfg_quote(cfg_text(k), buf, sizeof buf),
						p->ctx[0] ? " in " : "", p->ctx,
						k0->start_mark.line + 1);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

/* Parse a whole decimal integer (optional '-'); false on anything else. */
static bool
cfg_parse_int64(const char *s, int64_t *out)
{
	const char *c = s;
	char *end;
	long long v;

	if (*c == '-')
		c++;
	if (*c < '0' || *c > '9')
		return false;
	for (; *c != '\0'; c++)
		if (*c < '0' || *c > '9')
			return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

/* Valid job or warehouse name: [A-Za-z0-9_][A-Za-z0-9_.-]*, at most 64. */
static bool
cfg_valid_name(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > CFG_NAME_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

/* "a/./b//c" -> "a/b/c": drop empty and "." components (".." is kept:
 * only the kernel knows what it means past a symlink). */
static char *
cfg_clean_path(const char *path)
{
	size_t n = strlen(path), o = 0;
	char *out = xmalloc(n + 2);
	const char *s = path;

	if (*s == '/')
		out[o++] = '/';
	while (*s != '\0') {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len > 0 && !(len == 1 && s[0] == '.')) {
			if (o > 0 && out[o - 1] != '/')
				out[o++] = '/';
			memcpy(out + o, s, len);
			o += len;
		}
		s += len;
		if (*s == '/')
			s++;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	return out;
}

/* rel resolved against dir (rel itself when absolute), cleaned. */
static char *
cfg_resolve(const char *dir, const char *rel)
{
	char *joined, *out;
	size_t n;

	if (rel[0] == '/')
		return cfg_clean_path(rel);
	n = strlen(dir) + strlen(rel) + 2;
	joined = xmalloc(n);
	snprintf(joined, n, "%s/%s", dir, rel);
	out = cfg_clean_path(joined);
	free(joined);
	return out;
}

/* Absolute form of a config path: realpath when it exists, else joined
 * to the working directory. */
static char *
cfg_abs_path(const char *path, bool use_realpath)
{
	char cwd[PATH_MAX];
	char *rp;

	if (use_realpath && (rp = realpath(path, NULL)) != NULL)
		return rp;
	if (path[0] == '/')
		return cfg_clean_path(path);
	if (getcwd(cwd, sizeof cwd) == NULL)
		return cfg_clean_path(path);
	return cfg_resolve(cwd, path);
}

/* Folder of an absolute path. */
static char *
cfg_dirname(const char *abs)
{
	const char *slash = strrchr(abs, '/');
	size_t n;

	if (slash == NULL)
		return xstrdup(".");
	n = slash == abs ? 1 : (size_t)(slash - abs);
	return xstrndup(abs, n);
}

/* What a file that is not a regular one is, for messages. */
static const char *
cfg_file_kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/*
 * Read a whole regular file of at most `max` bytes, NUL-terminated.
 * Opened O_NONBLOCK so that a FIFO cannot hang the load (nor a SIGHUP
 * reload, which runs on the loop); anything but a regular file is
 * refused after fstat, before reading.  Returns 0, or -1 with `why` (one
 * phrase: strerror, "Is a directory", "it is a FIFO, not a regular
 * file", "it is 5000000 bytes, more than 4194304").
 */
static int
cfg_read_file(const char *path, size_t max, char **buf, size_t *len,
	      char *why, size_t whysz)
{
	struct stat st;
	size_t n = 0;
	char *b = NULL;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, whysz, "%s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(why, whysz, "%s", strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(why, whysz, "%s", strerror(EISDIR));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whysz, "it is %s, not a regular file",
			 cfg_file_kind(st.st_mode));
		goto fail;
	}
	if ((uintmax_t)st.st_size > max) {
		snprintf(why, whysz, "it is %jd bytes, more than %zu",
			 (intmax_t)st.st_size, max);
		goto fail;
	}
	b = xmalloc(max + 2);
	/* read up to max + 1: a file that grew past max since fstat */
	while (n <= max) {
		ssize_t r = read(fd, b + n, max + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(why, whysz, "%s", strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		snprintf(why, whysz, "it is more than %zu bytes", max);
		goto fail;
	}
	b[n] = '\0';
	close(fd);
	*buf = b;
	*len = n;
	return 0;
fail:
	free(b);
	close(fd);
	return -1;
}

/* FNV-1a 64 over bytes, continuing from h. */
static uint64_t
cfg_fnv(uint64_t h, const void *buf, size_t n)
{
	const unsigned char *c = buf;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= c[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define CFG_FNV_INIT 0xcbf29ce484222325ULL

/* Hash one tagged field: "tag:LEN:bytes", or "tag:-" for NULL. */
static uint64_t
cfg_fnv_field(uint64_t h, const char *tag, const char *s)
{
	char len[32];

	h = cfg_fnv(h, tag, strlen(tag));
	if (s == NULL)
		return cfg_fnv(h, ":-;", 3);
	snprintf(len, sizeof len, ":%zu:", strlen(s));
	h = cfg_fnv(h, len, strlen(len));
	h = cfg_fnv(h, s, strlen(s));
	return cfg_fnv(h, ";", 1);
}

/* Hash one tagged integer field. */
static uint64_t
cfg_fnv_int(uint64_t h, const char *tag, long long v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%lld", v);
	return cfg_fnv_field(h, tag, buf);
}

/* ------------------------------------------------------------------ */
/* Generic mapping walk                                                */
/* ------------------------------------------------------------------ */

/* The table row for key `name`, or NULL. */
static const struct cfg_key *
cfg_key_find(const struct cfg_key *table, const char *name)
{
	for (; table->name != NULL; table++)
		if (strcmp(table->name, name) == 0)
			return table;
	return NULL;
}

/* Refuse an unknown key, suggesting the closest valid one. */
static int
cfg_unknown_key(struct cfg_parser *p, yaml_node_t *kn,
		const struct cfg_key *table)
{
	const char *word = cfg_text(kn), *sugg = NULL;
	size_t best = SIZE_MAX;
	char buf[CFG_QUOTE_MAX * 4 + 16], where[CFG_CTX_MAX + 8];

	for (; table->name != NULL; table++)
		if (suggest_close(word, table->name, &best))
			sugg = table->name;
	if (p->ctx[0] != '\0')
		snprintf(where, sizeof where, "in %s", p->ctx);
	else
		snprintf(where, sizeof where, "at the top level");
	if (sugg != NULL)
		return cfg_fail(p, kn->start_mark,
				"unknown key %s %s; did you mean \"%s\"?",
				cfg_quote(word, buf, sizeof buf), where, sugg);
	return cfg_fail(p, kn->start_mark, "unknown key %s %s",
			cfg_quote(word, buf, sizeof buf), where);
}

/* Walk mapping node map with a table: check every key, then run the
 * handlers phase by phase, in document order within a phase. */
static int
cfg_parse_map(struct cfg_parser *p, yaml_node_t *map,
	      const struct cfg_key *table, void *obj)
{
	yaml_node_pair_t *pr;
	int phase, maxphase = 0;

	if (cfg_check_dups(p, map) < 0)
		return -1;
	for (pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *kn = cfg_node(p, pr->key);
		const struct cfg_key *k = cfg_key_find(table, cfg_text(kn));

		if (k == NULL)
			return cfg_unknown_key(p, kn, table);
		if (k->phase > maxphase)
			maxphase = k->phase;
	}
	for (phase = 0; phase <= maxphase; phase++) {
		for (pr = map->data.mapping.pairs.start;
		     pr < map->data.mapping.pairs.top; pr++) {
			yaml_node_t *kn = cfg_node(p, pr->key);
			yaml_node_t *vn = cfg_node(p, pr->value);
			const struct cfg_key *k = cfg_key_find(table, cfg_text(kn));

			if (k->phase != phase)
				continue;
			if (k->type != YAML_NO_NODE && vn->type != k->type)
				return cfg_bad_value(p, k, vn);
			if (k->fn(p, obj, k, kn, vn) < 0)
				return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Generic handlers                                                    */
/* ------------------------------------------------------------------ */

#define CFG_FIELD(obj, off, type) ((type *)(void *)((char *)(obj) + (off)))

/* A non-empty string without NUL bytes, or an error. */
static int
cfg_want_text(struct cfg_parser *p, const struct cfg_key *k, yaml_node_t *val)
{
	if (val->type != YAML_SCALAR_NODE || cfg_is_null(val) ||
	    cfg_text(val)[0] == '\0' ||
	    strlen(cfg_text(val)) != val->data.scalar.length)
		return cfg_bad_value(p, k, val);
	return 0;
}

/* A string into a char * field. */
static int
cfg_h_str(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	  yaml_node_t *key, yaml_node_t *val)
{
	char **f = CFG_FIELD(obj, k->off, char *);

	if (cfg_want_text(p, k, val) < 0)
		return -1;
	free(*f);
	*f = xstrdup(cfg_text(val));
	return 0;
}

/* A path, resolved against the config's folder, into a char * field. */
static int
cfg_h_path(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	   yaml_node_t *key, yaml_node_t *val)
{
	char **f = CFG_FIELD(obj, k->off, char *);

	if (cfg_want_text(p, k, val) < 0)
		return -1;
	free(*f);
	*f = cfg_resolve(p->dir, cfg_text(val));
	/* the daemon adds suffixes (-wal, .lock, logs/...) to such paths */
	if (strlen(*f) > PATH_MAX - 16)
		return cfg_fail(p, val->start_mark, "%s%s is %zu bytes long once"
				" resolved, above the limit of %d: use a shorter"
				" path", p->pfx, k->name, strlen(*f),
				PATH_MAX - 16);
	return 0;
}

/* An integer in [min, INT_MAX] into an int field (min in off2). */
static int
cfg_h_int(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	  yaml_node_t *key, yaml_node_t *val)
{
	int64_t v;

	if (!cfg_parse_int64(cfg_text(val), &v) || v < (int64_t)k->off2 ||
	    v > INT_MAX)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, int) = (int)v;
	return 0;
}

/* hook_concurrency (1 to HOOKQ_CONCURRENCY_MAX) or hook_queue (0 to
 * HOOKQ_QUEUE_MAX: each queued hook holds its argv and environment) into
 * an int field (the maximum in off2). */
static int
cfg_h_hookq(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	int64_t v, min = k->off2 == HOOKQ_CONCURRENCY_MAX ? 1 : 0;

	(void)key;
	if (!cfg_parse_int64(cfg_text(val), &v) || v < min ||
	    v > (int64_t)k->off2)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, int) = (int)v;
	return 0;
}

/* A non-negative integer into an int64_t field. */
static int
cfg_h_int64(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	int64_t v;

	if (!cfg_parse_int64(cfg_text(val), &v) || v < 0)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, int64_t) = v;
	return 0;
}

/* A duration ("30s", "15m", "2h", "1d") into an int64_t field (seconds). */
static int
cfg_h_duration(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	       yaml_node_t *key, yaml_node_t *val)
{
	struct err e;
	int64_t v;

	if (cfg_is_null(val) ||
	    cal_parse_duration(cfg_text(val), &v, &e) < 0)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, int64_t) = v;
	return 0;
}

/* A positive duration. */
static int
cfg_h_posduration(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		  yaml_node_t *key, yaml_node_t *val)
{
	if (cfg_h_duration(p, obj, k, key, val) < 0)
		return -1;
	if (*CFG_FIELD(obj, k->off, int64_t) <= 0)
		return cfg_bad_value(p, k, val);
	return 0;
}

/* keep_runs: a duration of at least an hour (pruning runs at most hourly). */
static int
cfg_h_keep(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	   yaml_node_t *key, yaml_node_t *val)
{
	if (cfg_h_duration(p, obj, k, key, val) < 0)
		return -1;
	if (*CFG_FIELD(obj, k->off, int64_t) < 3600)
		return cfg_bad_value(p, k, val);
	return 0;
}

/* true or false (only those) into a bool field. */
static int
cfg_h_bool(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	   yaml_node_t *key, yaml_node_t *val)
{
	const char *s = cfg_text(val);

	if (strcmp(s, "true") == 0)
		*CFG_FIELD(obj, k->off, bool) = true;
	else if (strcmp(s, "false") == 0)
		*CFG_FIELD(obj, k->off, bool) = false;
	else
		return cfg_bad_value(p, k, val);
	return 0;
}

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

/* A sequence of non-empty strings into char ** (off) and size_t (off2). */
static int
cfg_h_strseq(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	     yaml_node_t *key, yaml_node_t *val)
{
	char ***f = CFG_FIELD(obj, k->off, char **);
	size_t *nf = CFG_FIELD(obj, k->off2, size_t);
	size_t i, n = cfg_seq_len(val);

	if (n == 0)
		return cfg_bad_value(p, k, val);
	*f = xcalloc(n, sizeof **f);
	for (i = 0; i < n; i++) {
		yaml_node_t *it = cfg_seq_item(p, val, i);

		if (cfg_want_text(p, k, it) < 0)
			return -1;
		(*f)[i] = xstrdup(cfg_text(it));
		*nf = i + 1;
	}
	return 0;
}

/* A key whose value is checked later (start, end: they need the grain). */
static int
cfg_h_later(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	return cfg_want_text(p, k, val);
}

/* ------------------------------------------------------------------ */
/* Top level                                                           */
/* ------------------------------------------------------------------ */

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

static int cfg_h_warehouses(struct cfg_parser *, void *,
			    const struct cfg_key *, yaml_node_t *,
			    yaml_node_t *);
static int cfg_h_jobs(struct cfg_parser *, void *, const struct cfg_key *,
		      yaml_node_t *, yaml_node_t *);
static int cfg_h_include(struct cfg_parser *, void *, const struct cfg_key *,
			 yaml_node_t *, yaml_node_t *);

#define CFG_OFF(type, field) offsetof(struct type, field)
#define CFG_POSINT "a positive integer"
#define CFG_DURATION "a duration like 30s, 15m, 2h or 1d"
#define CFG_POSDURATION "a positive duration like 30s, 15m, 2h or 1d"
#define CFG_KEEP "a duration of at least 1h, like 30d or 365d"
#define CFG_LEASE "a duration of at least 1s, like 10s"
#define CFG_NODE_NAME "1 to 64 letters, digits, '_', '-' or '.', not" \
	" starting with '-' or '.'"

static bool cfg_src_line(struct cfg_parser *, size_t, size_t *, size_t *);

/* The state store of several hosts (state: postgres:). */
static const struct cfg_key cfg_state_keys[] = {
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

static const struct cfg_key cfg_top_keys[] = {
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
	  "a sequence of file names or glob patterns", 1 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* An included file: these keys only (settings belong to the main file). */
static const struct cfg_key cfg_inc_keys[] = {
	{ "warehouses", YAML_SEQUENCE_NODE, cfg_h_warehouses, 0, 0,
	  "a sequence of warehouses", 0 },
	{ "jobs", YAML_SEQUENCE_NODE, cfg_h_jobs, 0, 0, "a sequence of jobs",
	  0 },
	{ "include", YAML_SEQUENCE_NODE, cfg_h_include, 0, 0,
	  "a sequence of file names or glob patterns", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* ------------------------------------------------------------------ */
/* Warehouses                                                          */
/* ------------------------------------------------------------------ */

/*
 * Take the name of a warehouse or job (what) from val into *name: text, a
 * valid name, and not the name of an earlier one (dup: where that one
 * is, or NULL; dupfile: the file that defines it), checked in that order.
 * A duplicate in another file names both places in full.
 */
static int
cfg_take_name(struct cfg_parser *p, const struct cfg_key *k, yaml_node_t *val,
	      const char *what, const struct pos *dup, const char *dupfile,
	      char **name)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];

	if (cfg_want_text(p, k, val) < 0)
		return -1;
	if (!cfg_valid_name(cfg_text(val)))
		return cfg_fail(p, val->start_mark,
				"%s name %s must be 1 to 64 letters, digits, '_', '-' or '.', not starting with '-' or '.'",
				what, cfg_quote(cfg_text(val), buf, sizeof buf));
	if (dup != NULL && dupfile != NULL &&
	    strcmp(dupfile, p->srcs[p->cur]->abs) != 0)
		return cfg_fail(p, val->start_mark,
				"duplicate %s name %s: also defined at %s:%d; %s names must be unique across all included files",
				what, cfg_quote(cfg_text(val), buf, sizeof buf),
				dupfile, dup->line, what);
	if (dup != NULL)
		return cfg_fail(p, val->start_mark,
				"duplicate %s name %s (first at line %d); %s names must be unique",
				what, cfg_quote(cfg_text(val), buf, sizeof buf),
				dup->line, what);
	*name = xstrdup(cfg_text(val));
	return 0;
}

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

/* A finite number, the whole of t. */
static bool
cfg_real(const char *t, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(t, &end);
	return end != t && *end == '\0' && errno == 0 && isfinite(*v);
}

/* A finite number (YAML int or float) into a double; off2 names the
 * bool field that says it was given. */
static int
cfg_h_number(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	     yaml_node_t *key, yaml_node_t *val)
{
	double v;

	(void)key;
	if (!cfg_real(cfg_text(val), &v))
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, double) = v;
	*CFG_FIELD(obj, k->off2, bool) = true;
	return 0;
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
static const struct cfg_key cfg_throttle_keys[] = {
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

/*
 * An argv (command:, the hooks): a non-empty sequence of strings, the
 * first non-empty, none holding a NUL; each element checked by ok (may be
 * NULL), which returns -1 after reporting.  Fills *argv (NULL-terminated)
 * and *argc.
 */
static int
cfg_take_argv(struct cfg_parser *p, const struct cfg_key *k, yaml_node_t *val,
	      int (*ok)(struct cfg_parser *, const struct cfg_key *,
			yaml_node_t *), char ***argv, size_t *argc)
{
	size_t i, n = cfg_seq_len(val);

	if (n == 0)
		return cfg_bad_value(p, k, val);
	*argv = xcalloc(n + 1, sizeof **argv);
	for (i = 0; i < n; i++) {
		yaml_node_t *it = cfg_seq_item(p, val, i);

		if (it->type != YAML_SCALAR_NODE ||
		    (i == 0 && (cfg_is_null(it) || cfg_text(it)[0] == '\0')) ||
		    strlen(cfg_text(it)) != it->data.scalar.length)
			return cfg_bad_value(p, k, it);
		if (ok != NULL && ok(p, k, it) < 0)
			return -1;
		(*argv)[i] = xstrdup(cfg_is_null(it) ? "" : cfg_text(it));
		*argc = i + 1;
	}
	return 0;
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

static const struct cfg_key cfg_wh_keys[] = {
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

/*
 * Start loading item i of the warehouses or jobs (what): it must be a
 * mapping (holding `needs`, for the message) with a name:.  Sets *pos and
 * the message context to the item's name (or number when the name is not
 * a scalar: the name's handler says what is wrong with it).
 */
static int
cfg_item_begin(struct cfg_parser *p, yaml_node_t *it, size_t i,
	       const char *what, const char *needs, struct pos *pos)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];
	yaml_node_t *nm;

	if (it->type != YAML_MAPPING_NODE)
		return cfg_fail(p, it->start_mark,
				"each %s must be a mapping with %s, got %s",
				what, needs, cfg_got(it, buf, sizeof buf));
	*pos = cfg_pos(it->start_mark);
	nm = cfg_map_get(p, it, "name");
	if (nm == NULL)
		return cfg_fail(p, it->start_mark,
				"%s %zu has no name: every %s needs name: NAME",
				what, i + 1, what);
	if (nm->type == YAML_SCALAR_NODE)
		cfg_set_ctx(p, "%s %s", what,
			    cfg_quote(cfg_text(nm), buf, sizeof buf));
	else
		cfg_set_ctx(p, "%s %zu", what, i + 1);
	return 0;
}

/* Make file i of the configuration the current one: messages, node
 * lookups and relative paths refer to it from now on. */
static void
cfg_use(struct cfg_parser *p, size_t i)
{
	struct cfg_src *f = p->srcs[i];

	p->cur = i;
	p->file = f->file;
	p->src = f->text;
	p->srclen = f->len;
	p->doc = f->has_doc ? &f->doc : NULL;
	p->dir = f->dir;
}

/* warehouses: a sequence, taken in when every file is read. */
static int
cfg_h_warehouses(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		 yaml_node_t *key, yaml_node_t *val)
{
	p->srcs[p->cur]->wh = val;
	return 0;
}

/* The warehouses of every file, in load order. */
static int
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

/* ------------------------------------------------------------------ */
/* Jobs                                                                */
/* ------------------------------------------------------------------ */

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

/* partition: hour | day | week | month. */
static int
cfg_h_grain(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	if (cfg_is_null(val) ||
	    grain_parse(cfg_text(val), &((struct job_def *)obj)->grain) < 0)
		return cfg_bad_value(p, k, val);
	return 0;
}

/* sql: inline SQL text. */
static int
cfg_h_sql(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	  yaml_node_t *key, yaml_node_t *val)
{
	return cfg_h_str(p, obj, k, key, val);
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

/* severity: error or warn (severity.h), into a bool at k->off. */
static int
cfg_h_severity(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	       yaml_node_t *key, yaml_node_t *val)
{
	(void)key;
	if (severity_parse(cfg_text(val), (bool *)((char *)obj + k->off)) < 0)
		return cfg_bad_value(p, k, val);
	return 0;
}

static const struct cfg_key cfg_check_keys[] = {
	{ "name", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(check_def, name), 0,
	  "a name", 0 },
	{ "sql", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(check_def, sql), 0,
	  "SQL text", 0 },
	{ "severity", YAML_SCALAR_NODE, cfg_h_severity,
	  CFG_OFF(check_def, warn), 0, "error or warn", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* Name the i-th item of a sequence of named mappings in the context
 * ("check \"c\" of ..." or "check 2 of ..."); returns its name node
 * (NULL when it has none). */
static yaml_node_t *
cfg_item_ctx(struct cfg_parser *p, yaml_node_t *it, const char *kind,
	     size_t i, const char *saved)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];
	yaml_node_t *nm = cfg_map_get(p, it, "name");

	if (nm != NULL && nm->type == YAML_SCALAR_NODE && !cfg_is_null(nm))
		cfg_set_ctx(p, "%s %s of %s", kind,
			    cfg_quote(cfg_text(nm), buf, sizeof buf), saved);
	else
		cfg_set_ctx(p, "%s %zu of %s", kind, i + 1, saved);
	return nm;
}

/* checks: a sequence of {name, sql}. */
static int
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

	(void)key;
	if (reconcile_tolerance_parse(cfg_text(val), &r->tolerance) < 0)
		return cfg_bad_value(p, k, val);
	return 0;
}

static const struct cfg_key cfg_recon_source_keys[] = {
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

static const struct cfg_key cfg_recon_keys[] = {
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
static int
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
	if (!cfg_real(cfg_text(val), &v) || v <= 0)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, double) = v;
	return 0;
}

#define CFG_TREND_INT "an integer from 2 to 1000"
static const struct cfg_key cfg_trend_keys[] = {
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

static const struct cfg_key cfg_metric_keys[] = {
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
static int
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
static const struct cfg_key cfg_late_keys[] = {
	{ "sql", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(late_data_def, sql), 0,
	  "SQL text", 0 },
	{ "every", YAML_SCALAR_NODE, cfg_h_posduration,
	  CFG_OFF(late_data_def, every), 0,
	  "a positive duration like 30s, 15m, 2h or 1d", 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* late_data: {sql, every}, both required. */
static int
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

static const struct cfg_key cfg_job_keys[] = {
	{ "name", YAML_SCALAR_NODE, cfg_h_job_name, 0, 0, "a name", 0 },
	{ "warehouse", YAML_SCALAR_NODE, cfg_h_str, CFG_JOB(warehouse_name), 0,
	  "a warehouse name", 0 },
	{ "partition", YAML_SCALAR_NODE, cfg_h_grain, 0, 0,
	  "one of hour, day, week, month", 0 },
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
	{ "sql", YAML_SCALAR_NODE, cfg_h_sql, CFG_JOB(sql), 0, "SQL text", 0 },
	{ "sql_file", YAML_SCALAR_NODE, cfg_h_sql_file, CFG_JOB(sql_file), 0,
	  "a file path", 0 },
	{ "command", YAML_SEQUENCE_NODE, cfg_h_command, 0, 0,
	  "a non-empty sequence of strings (argv, no shell)", 0 },
	{ "checks", YAML_SEQUENCE_NODE, cfg_h_checks, 0, 0,
	  "a sequence of {name, sql}", 0 },
	{ "reconcile", YAML_SEQUENCE_NODE, cfg_h_reconcile, 0, 0,
	  "a sequence of {name, source, target, tolerance}", 0 },
	{ "upstream", YAML_SEQUENCE_NODE, cfg_h_strseq, CFG_JOB(upstream),
	  CFG_JOB(nupstream), "a sequence of job names", 0 },
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

/* "warehouses are: a, b" (or "no warehouses are defined") into buf. */
static const char *
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

/* Parse a start/end text at the job's grain: the partition, and the first
 * (or, with `last`, the last) second of the date or hour as written.
 * `last` also maps a day of an hourly job to its last hour. */
static int
cfg_job_date(struct cfg_parser *p, struct job_def *j, yaml_node_t *val,
	     const char *what, bool last, part_t *part, int64_t *t)
{
	const char *s = cfg_text(val);
	struct err e;
	int64_t v;
	char buf[CFG_QUOTE_MAX * 4 + 16];

	if (j->grain == GRAIN_HOUR && strchr(s, 'T') != NULL) {
		if (cal_parse_hour(s, &v, &e) < 0)
			return cfg_fail(p, val->start_mark,
					"%s%s must be a date YYYY-MM-DD or an hour YYYY-MM-DDTHH, got %s",
					p->pfx, what, cfg_quote(s, buf, sizeof buf));
		*part = v;
		*t = v * 3600 + (last ? 3599 : 0);
		return 0;
	}
	if (cal_parse_date(s, &v, &e) < 0) {
		if (j->grain == GRAIN_HOUR)
			return cfg_fail(p, val->start_mark,
					"%s%s must be a date YYYY-MM-DD or an hour YYYY-MM-DDTHH, got %s",
					p->pfx, what, cfg_quote(s, buf, sizeof buf));
		return cfg_fail(p, val->start_mark,
				"%s%s must be a date YYYY-MM-DD, got %s", p->pfx,
				what, cfg_quote(s, buf, sizeof buf));
	}
	*t = v * 86400 + (last ? 86399 : 0);
	if (j->grain == GRAIN_HOUR)
		*part = part_of_time(GRAIN_HOUR, v * 86400 + (last ? 86400 - 3600 : 0));
	else
		*part = part_of_day(j->grain, v);
	return 0;
}

/* The SQL dialect of warehouse index wh (-1: none, SQLite's). */
static enum sqlscan_dialect
cfg_dialect(const struct config *cfg, int wh)
{
	if (wh >= 0 && cfg->warehouses[wh].kind == WH_POSTGRES)
		return SQLSCAN_PG;
	if (wh >= 0 && cfg->warehouses[wh].kind == WH_CLICKHOUSE)
		return SQLSCAN_CH;
	return SQLSCAN_SQLITE;
}

enum sqlscan_dialect
config_job_dialect(const struct config *cfg, const struct job_def *j)
{
	return cfg_dialect(cfg, j->warehouse);
}

/* The first read of the wall clock in a job's SQL (sqlscan.h), in the
 * dialect of its warehouse: the byte offset, or -1. */
static long
cfg_wall_clock(const struct config *cfg, const struct job_def *j,
	       const char *sql, const char **what)
{
	return sqlscan_wall_clock(sql, cfg_dialect(cfg, j->warehouse), what);
}

/* 1-based line and column of byte `off` of a text. */
static void
cfg_text_pos(const char *text, size_t off, int *line, int *col)
{
	size_t i, ls = 0;

	*line = 1;
	for (i = 0; i < off && text[i] != '\0'; i++)
		if (text[i] == '\n') {
			(*line)++;
			ls = i + 1;
		}
	*col = (int)(off - ls) + 1;
}

/* Byte range [*s, *e) of 0-based line `line` of the source, without its
 * line break; false when there is no such line. */
static bool
cfg_src_line(struct cfg_parser *p, size_t line, size_t *s, size_t *e)
{
	size_t i = 0, l = 0;

	while (l < line) {
		const char *nl = memchr(p->src + i, '\n', p->srclen - i);

		if (nl == NULL)
			return false;
		i = (size_t)(nl - p->src) + 1;
		l++;
	}
	*s = i;
	while (i < p->srclen && p->src[i] != '\n')
		i++;
	if (i > *s && p->src[i - 1] == '\r')
		i--;
	*e = i;
	return true;
}

/* 1-based file position of byte `off` of scalar node n's value: exact for a
 * literal block (|) or a one-line plain or quoted scalar whose source text
 * matches; the node's own position otherwise. */
static void
cfg_scalar_pos(struct cfg_parser *p, const yaml_node_t *n, size_t off,
	       int *line, int *col)
{
	const char *v = cfg_text(n);
	size_t s, e, i, ls = 0, li = 0, vlen;

	*line = (int)n->start_mark.line + 1;
	*col = (int)n->start_mark.column + 1;
	for (i = 0; i < off; i++)
		if (v[i] == '\n') {
			li++;
			ls = i + 1;
		}
	if (n->data.scalar.style == YAML_LITERAL_SCALAR_STYLE) {
		size_t indent;

		vlen = strcspn(v + ls, "\n");
		if (!cfg_src_line(p, n->start_mark.line + 1 + li, &s, &e) ||
		    e - s < vlen)
			return;
		indent = e - s - vlen;
		for (i = 0; i < indent; i++)
			if (p->src[s + i] != ' ')
				return;
		if (memcmp(p->src + s + indent, v + ls, vlen) != 0)
			return;
		*line = (int)(n->start_mark.line + 1 + li) + 1;
		*col = (int)(indent + off - ls) + 1;
		return;
	}
	if (li == 0 && n->data.scalar.style != YAML_FOLDED_SCALAR_STYLE) {
		size_t q = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? 0 : 1;
		size_t want = off + 1;

		if (!cfg_src_line(p, n->start_mark.line, &s, &e))
			return;
		s += n->start_mark.column + q;
		if (s + want > e || memcmp(p->src + s, v, want) != 0)
			return;
		*col = (int)(n->start_mark.column + q + off) + 1;
	}
}

/* Refuse SQL that reads the wall clock, unless allow_wall_clock.  `what`
 * names the SQL after the job (" check \"c\"", " reconcile \"r\" source"
 * or "" for the job's own); wh is the warehouse it runs on (its dialect). */
static int
cfg_no_wall_clock(struct cfg_parser *p, const struct job_def *j,
		  const yaml_node_t *sqlnode, const char *sql,
		  const char *what_sql, int wh)
{
	const char *what = NULL;
	long off;
	int line, col;

	if (j->allow_wall_clock ||
	    (off = sqlscan_wall_clock(sql, cfg_dialect(p->cfg, wh), &what)) < 0)
		return 0;
	cfg_scalar_pos(p, sqlnode, (size_t)off, &line, &col);
	return cfg_fail_at(p, line, col,
			   "job \"%s\"%s reads the wall clock (%s): take the date from :partition, or set allow_wall_clock: true",
			   j->name, what_sql, what);
}

/* The key node, of those named, that comes second in the mapping. */
static yaml_node_t *
cfg_second_key(struct cfg_parser *p, const yaml_node_t *map,
	       const char *const *names, const char **first)
{
	yaml_node_pair_t *pr;
	size_t i, seen = 0;

	for (pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = cfg_node(p, pr->key);

		for (i = 0; names[i] != NULL; i++) {
			if (strcmp(cfg_text(k), names[i]) != 0)
				continue;
			if (seen++ == 1)
				return k;
			*first = names[i];
		}
	}
	return NULL;
}

/* A job's start: and end:, end not before start. */
static int
cfg_job_span(struct cfg_parser *p, struct job_def *j, yaml_node_t *map)
{
	yaml_node_t *n_start = cfg_map_get(p, map, "start");
	yaml_node_t *n_end = cfg_map_get(p, map, "end");
	int64_t ts = 0, te = 0;

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

/* Keys that need others: deadline, hooks, batch, guardrails, verify. */
static int
cfg_job_needs(struct cfg_parser *p, struct job_def *j, yaml_node_t *map,
	      bool is_sql)
{
	yaml_node_t *k2;
	size_t i;

	if ((k2 = cfg_map_key(p, map, "deadline")) != NULL &&
	    !j->has_start && j->nupstream == 0)
		return cfg_fail(p, k2->start_mark,
				"%sdeadline needs a schedule: add start: (a clock-driven job) or upstream: (a downstream job)",
				p->pfx);
	if ((k2 = cfg_map_key(p, map, "on_late")) != NULL && j->deadline == 0)
		return cfg_fail(p, k2->start_mark,
				"%son_late needs deadline: (how long after a partition is due it is late)",
				p->pfx);
	if ((k2 = cfg_map_key(p, map, "on_refused")) != NULL &&
	    (!j->has_start || j->nupstream > 0))
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

static int cfg_no_txn(struct cfg_parser *p, const struct job_def *j,
		      const yaml_node_t *n, const char *sql, const char *what,
		      const yaml_node_t *key, const char *file, int flags,
		      int wh);

/* A job's reconcile SQL, scanned as its own: the source in the dialect of
 * its warehouse, the target in the job's; the wall clock (txn false) or
 * transaction control (txn true).  The source runs outside the run's
 * transaction, but a source that commits or reads the clock is as wrong. */
static int
cfg_recon_scan(struct cfg_parser *p, const struct job_def *j,
	       yaml_node_t *map, bool txn)
{
	yaml_node_t *seq = cfg_map_get(p, map, "reconcile"), *it, *src;
	char what[CFG_QUOTE_MAX * 4 + 48], buf[CFG_QUOTE_MAX * 4 + 16];

	for (size_t i = 0; seq != NULL && i < j->nreconciles; i++) {
		const struct reconcile_def *r = &j->reconciles[i];

		it = cfg_seq_item(p, seq, i);
		src = cfg_map_get(p, it, "source");
		cfg_quote(r->name, buf, sizeof buf);
		snprintf(what, sizeof what, " reconcile %s source", buf);
		if (txn ? cfg_no_txn(p, j, cfg_map_get(p, src, "sql"),
				     r->source_sql, what, NULL, NULL, 0,
				     r->source_wh) < 0 :
			  cfg_no_wall_clock(p, j, cfg_map_get(p, src, "sql"),
					    r->source_sql, what, r->source_wh) < 0)
			return -1;
		snprintf(what, sizeof what, " reconcile %s target", buf);
		if (txn ? cfg_no_txn(p, j, cfg_map_get(p, it, "target"),
				     r->target_sql, what, NULL, NULL, 0,
				     j->warehouse) < 0 :
			  cfg_no_wall_clock(p, j, cfg_map_get(p, it, "target"),
					    r->target_sql, what, j->warehouse) < 0)
			return -1;
	}
	return 0;
}

/* The job's SQL and its checks must not read the wall clock. */
static int
cfg_job_clock(struct cfg_parser *p, struct job_def *j, yaml_node_t *map)
{
	yaml_node_t *n_sql = cfg_map_get(p, map, "sql");
	yaml_node_t *n_file = cfg_map_get(p, map, "sql_file");
	yaml_node_t *n;
	char chk[CFG_QUOTE_MAX * 4 + 32], buf[CFG_QUOTE_MAX * 4 + 16];
	size_t i;

	if (j->sql != NULL && !j->allow_wall_clock) {
		const char *what = NULL;
		long off;

		if (n_sql != NULL) {
			if (cfg_no_wall_clock(p, j, n_sql, j->sql, "",
					      j->warehouse) < 0)
				return -1;
		} else if ((off = cfg_wall_clock(p->cfg, j, j->sql, &what)) >= 0) {
			int line, col;

			cfg_text_pos(j->sql, (size_t)off, &line, &col);
			return cfg_fail(p, n_file->start_mark,
					"job \"%s\" reads the wall clock (%s) at %s:%d:%d: take the date from :partition, or set allow_wall_clock: true",
					j->name, what, cfg_text(n_file), line, col);
		}
	}
	if ((n = cfg_map_get(p, map, "checks")) != NULL)
		for (i = 0; i < j->nchecks; i++) {
			snprintf(chk, sizeof chk, " check %s",
				 cfg_quote(j->checks[i].name, buf, sizeof buf));
			if (cfg_no_wall_clock(p, j,
					      cfg_map_get(p, cfg_seq_item(p, n, i), "sql"),
					      j->checks[i].sql, chk, j->warehouse) < 0)
				return -1;
		}
	return cfg_recon_scan(p, j, map, false);
}

/*
 * Refuse SQL that controls the run's transaction (sqlscan_txn: COMMIT,
 * ROLLBACK, ATTACH, ...): the daemon begins and commits each partition's
 * transaction itself.  `what` names the SQL after the job (" check
 * \"c\"", " metric \"m\"", " late_data" or "" for the job's own); n is
 * its scalar, or NULL when the text came from `file` (sql_file:, whose key
 * is `key`); flags as sqlscan_txn's.
 */
static int
cfg_no_txn(struct cfg_parser *p, const struct job_def *j,
	   const yaml_node_t *n, const char *sql, const char *what,
	   const yaml_node_t *key, const char *file, int flags, int wh)
{
	enum sqlscan_dialect d = SQLSCAN_SQLITE;
	struct sqlscan_txn t;
	int line, col;

	if (wh >= 0 && p->cfg->warehouses[wh].kind == WH_POSTGRES)
		d = SQLSCAN_PG;
	if (sqlscan_txn(sql, d, flags, &t) < 0)
		return 0;
	if (n == NULL) {
		cfg_text_pos(sql, (size_t)t.off, &line, &col);
		return cfg_fail(p, key->start_mark,
				"job \"%s\"%s statement %d controls the run's transaction (%s) at %s:%d:%d: " SQLSCAN_TXN_ADVICE,
				j->name, what, t.stmt, t.what, file, line, col);
	}
	cfg_scalar_pos(p, n, (size_t)t.off, &line, &col);
	return cfg_fail_at(p, line, col,
			   "job \"%s\"%s statement %d controls the run's transaction (%s): " SQLSCAN_TXN_ADVICE,
			   j->name, what, t.stmt, t.what);
}

/* The SQL a job runs (its own, its checks, its metrics inside the run's
 * transaction; its late_data sensor) must not control transactions. */
static int
cfg_job_txn(struct cfg_parser *p, struct job_def *j, yaml_node_t *map)
{
	yaml_node_t *n_file = cfg_map_get(p, map, "sql_file");
	yaml_node_t *n, *it;
	yaml_node_pair_t *pr;
	char what[CFG_QUOTE_MAX * 4 + 32], buf[CFG_QUOTE_MAX * 4 + 16];
	size_t i;

	if (j->sql != NULL &&
	    cfg_no_txn(p, j, n_file != NULL ? NULL : cfg_map_get(p, map, "sql"),
		       j->sql, "", n_file, n_file != NULL ? cfg_text(n_file) :
		       NULL, 0, j->warehouse) < 0)
		return -1;
	if ((n = cfg_map_get(p, map, "checks")) != NULL)
		for (i = 0; i < j->nchecks; i++) {
			snprintf(what, sizeof what, " check %s",
				 cfg_quote(j->checks[i].name, buf, sizeof buf));
			if (cfg_no_txn(p, j, cfg_map_get(p, cfg_seq_item(p, n, i),
						       "sql"),
				       j->checks[i].sql, what, NULL, NULL, 0,
				       j->warehouse) < 0)
				return -1;
		}
	if ((n = cfg_map_get(p, map, "metrics")) != NULL)
		for (i = 0, pr = n->data.mapping.pairs.start;
		     i < j->nmetrics && pr < n->data.mapping.pairs.top;
		     i++, pr++) {
			it = cfg_node(p, pr->value);
			if (it->type == YAML_MAPPING_NODE)
				it = cfg_map_get(p, it, "sql");
			snprintf(what, sizeof what, " metric %s",
				 cfg_quote(j->metrics[i].name, buf, sizeof buf));
			if (cfg_no_txn(p, j, it, j->metrics[i].sql, what, NULL,
				       NULL, SQLSCAN_TXN_EXPR, j->warehouse) < 0)
				return -1;
		}
	if (j->late_data != NULL &&
	    (n = cfg_map_get(p, map, "late_data")) != NULL &&
	    cfg_no_txn(p, j, cfg_map_get(p, n, "sql"), j->late_data->sql,
		       " late_data", NULL, NULL, 0, j->warehouse) < 0)
		return -1;
	return cfg_recon_scan(p, j, map, true);
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
				"%s needs partition: hour, day, week or month",
				p->ctx);
	if (cfg_job_span(p, j, map) < 0 ||
	    cfg_job_target(p, j, map, is_sql) < 0 ||
	    cfg_job_needs(p, j, map, is_sql) < 0 ||
	    cfg_job_clickhouse(p, j, map, is_sql) < 0)
		return -1;
	if (cfg_job_clock(p, j, map) < 0)
		return -1;
	return cfg_job_txn(p, j, map);
}

/* jobs: a sequence, taken in when every file is read. */
static int
cfg_h_jobs(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	   yaml_node_t *key, yaml_node_t *val)
{
	p->srcs[p->cur]->jobs = val;
	return 0;
}

/* The jobs of every file, in load order. */
static int
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

/* ------------------------------------------------------------------ */
/* Between jobs                                                        */
/* ------------------------------------------------------------------ */

/* The node of job j's upstream entry i. */
static yaml_node_t *
cfg_upstream_node(struct cfg_parser *p, size_t j, size_t i)
{
	cfg_use(p, p->job_src[j]);
	return cfg_seq_item(p, cfg_map_get(p, p->job_nodes[j], "upstream"), i);
}

/* Depth-first search for an upstream cycle from job u; path holds the
 * jobs on the stack. */
static int
cfg_find_cycle(struct cfg_parser *p, size_t u, char *state, size_t *path,
	       size_t depth)
{
	const struct config *cfg = p->cfg;
	const struct job_def *j = &cfg->jobs[u];
	size_t i, d;

	state[u] = 1;
	path[depth] = u;
	for (i = 0; i < j->nupstream; i++) {
		size_t v = (size_t)j->upstream_idx[i];

		if (state[v] == 1) {
			char buf[ERR_MSG_MAX / 2];
			size_t o = 0;

			for (d = 0; d <= depth && path[d] != v; d++)
				;
			for (; d <= depth && o < sizeof buf; d++)
				o += (size_t)snprintf(buf + o, sizeof buf - o,
						      "%s -> ",
						      cfg->jobs[path[d]].name);
			if (o < sizeof buf)
				snprintf(buf + o, sizeof buf - o, "%s",
					 cfg->jobs[v].name);
			return cfg_fail(p, cfg_upstream_node(p, u, i)->start_mark,
					"upstream cycle %s (each job lists the next in upstream); remove one of these entries",
					buf);
		}
		if (state[v] == 0 &&
		    cfg_find_cycle(p, v, state, path, depth + 1) < 0)
			return -1;
	}
	state[u] = 2;
	return 0;
}

/* Resolve upstream names, check grains and cycles, fill downstream and
 * the topological order. */
static int
cfg_link(struct cfg_parser *p)
{
	struct config *cfg = p->cfg;
	size_t a, b, i, placed;
	char *state = NULL;
	size_t *path = NULL;
	char q[CFG_QUOTE_MAX * 4 + 16];
	int rc = 0;

	for (a = 0; a < cfg->njobs; a++) {
		struct job_def *j = &cfg->jobs[a];

		if (j->nupstream == 0)
			continue;
		j->upstream_idx = xcalloc(j->nupstream, sizeof *j->upstream_idx);
		for (i = 0; i < j->nupstream; i++) {
			int u = config_job_index(cfg, j->upstream[i]);
			size_t best = SIZE_MAX, m;
			const char *sugg = NULL;

			if (u < 0) {
				for (b = 0; b < cfg->njobs; b++)
					if (suggest_close(j->upstream[i], cfg->jobs[b].name, &best))
						sugg = cfg->jobs[b].name;
				return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
						"job \"%s\": unknown upstream job %s%s%s%s",
						j->name, cfg_quote(j->upstream[i], q, sizeof q),
						sugg ? "; did you mean \"" : "",
						sugg ? sugg : "", sugg ? "\"?" : "");
			}
			for (m = 0; m < i; m++)
				if (j->upstream_idx[m] == u)
					return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
							"job \"%s\" lists upstream \"%s\" twice; keep one",
							j->name, j->upstream[i]);
			j->upstream_idx[i] = u;
			if (!grain_can_feed(cfg->jobs[u].grain, j->grain))
				return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
						"job \"%s\" (%s) cannot follow upstream \"%s\" (%s): a %s partition does not lie inside one %s partition; make \"%s\" as coarse as its upstream or coarser",
						j->name, grain_name(j->grain),
						cfg->jobs[u].name,
						grain_name(cfg->jobs[u].grain),
						grain_name(cfg->jobs[u].grain),
						grain_name(j->grain), j->name);
		}
	}

	state = xcalloc(cfg->njobs + 1, 1);
	path = xcalloc(cfg->njobs + 1, sizeof *path);
	for (a = 0; a < cfg->njobs && rc == 0; a++)
		if (state[a] == 0)
			rc = cfg_find_cycle(p, a, state, path, 0);
	if (rc < 0)
		goto out;

	/* downstream: every job that names this one, in job order */
	for (a = 0; a < cfg->njobs; a++) {
		struct job_def *j = &cfg->jobs[a];

		for (b = 0; b < cfg->njobs; b++)
			for (i = 0; i < cfg->jobs[b].nupstream; i++)
				if (cfg->jobs[b].upstream_idx[i] == (int)a)
					j->ndownstream++;
		if (j->ndownstream == 0)
			continue;
		j->downstream_idx = xcalloc(j->ndownstream, sizeof *j->downstream_idx);
		j->ndownstream = 0;
		for (b = 0; b < cfg->njobs; b++)
			for (i = 0; i < cfg->jobs[b].nupstream; i++)
				if (cfg->jobs[b].upstream_idx[i] == (int)a)
					j->downstream_idx[j->ndownstream++] = (int)b;
	}

	/* topo: repeatedly the lowest-index job whose upstream is placed */
	cfg->topo = xcalloc(cfg->njobs + 1, sizeof *cfg->topo);
	memset(state, 0, cfg->njobs + 1);
	for (placed = 0; placed < cfg->njobs;) {
		for (a = 0; a < cfg->njobs; a++) {
			const struct job_def *j = &cfg->jobs[a];
			bool ready = state[a] == 0;

			for (i = 0; ready && i < j->nupstream; i++)
				if (!state[j->upstream_idx[i]])
					ready = false;
			if (ready) {
				state[a] = 1;
				cfg->topo[placed++] = (int)a;
				break;
			}
		}
	}
out:
	free(state);
	free(path);
	return rc;
}

/* code_version: FNV-1a 64 over the job's definition, canonical and free
 * of positions, so moving a job in the file keeps its version. */
static void
cfg_code_version(struct job_def *j)
{
	uint64_t h = CFG_FNV_INIT;
	size_t i;

	h = cfg_fnv_field(h, "name", j->name);
	h = cfg_fnv_field(h, "grain", grain_name(j->grain));
	h = cfg_fnv_field(h, "sql", j->sql);
	h = cfg_fnv_int(h, "argc", j->command ? (long long)j->command_len : -1);
	for (i = 0; i < j->command_len; i++)
		h = cfg_fnv_field(h, "argv", j->command[i]);
	h = cfg_fnv_int(h, "checks", (long long)j->nchecks);
	for (i = 0; i < j->nchecks; i++) {
		h = cfg_fnv_field(h, "check.name", j->checks[i].name);
		h = cfg_fnv_field(h, "check.sql", j->checks[i].sql);
		if (j->checks[i].warn)
			h = cfg_fnv_field(h, "check.severity", "warn");
	}
	for (i = 0; i < j->nreconciles; i++) {
		char tol[64];

		reconcile_tolerance_format(&j->reconciles[i].tolerance, tol,
					   sizeof tol);
		h = cfg_fnv_field(h, "reconcile.name", j->reconciles[i].name);
		h = cfg_fnv_field(h, "reconcile.source",
				  j->reconciles[i].source_sql);
		h = cfg_fnv_field(h, "reconcile.target",
				  j->reconciles[i].target_sql);
		h = cfg_fnv_field(h, "reconcile.tolerance", tol);
		h = cfg_fnv_field(h, "reconcile.severity",
				  j->reconciles[i].warn ? "warn" : "error");
	}
	h = cfg_fnv_int(h, "metrics", (long long)j->nmetrics);
	for (i = 0; i < j->nmetrics; i++) {
		char mc[64];

		h = cfg_fnv_field(h, "metric.name", j->metrics[i].name);
		h = cfg_fnv_field(h, "metric.sql", j->metrics[i].sql);
		if (j->metrics[i].has_max_change)
			snprintf(mc, sizeof mc, "%.17g", j->metrics[i].max_change);
		h = cfg_fnv_field(h, "metric.max_change",
				  j->metrics[i].has_max_change ? mc : NULL);
		if (j->metrics[i].warn)
			h = cfg_fnv_field(h, "metric.severity", "warn");
		if (j->metrics[i].trend.has) {
			const struct trend_def *t = &j->metrics[i].trend;

			snprintf(mc, sizeof mc, "%d %.17g %d", t->last,
				 t->max_sigma, t->min_history);
			h = cfg_fnv_field(h, "metric.trend", mc);
		}
	}
	h = cfg_fnv_int(h, "key", (long long)j->nkey);
	for (i = 0; i < j->nkey; i++)
		h = cfg_fnv_field(h, "key.col", j->key[i]);
	h = cfg_fnv_field(h, "table", j->table);
	h = cfg_fnv_field(h, "partition_column", j->partition_column);
	h = cfg_fnv_int(h, "min_rows", (long long)j->min_rows);
	h = cfg_fnv_int(h, "batch", j->batch);
	if (j->batch_size > 0) /* batch: N; batch: true keeps its hash */
		h = cfg_fnv_int(h, "batch_size", j->batch_size);
	if (j->allow_empty) /* ClickHouse only: other jobs keep their hash */
		h = cfg_fnv_int(h, "allow_empty", 1);
	snprintf(j->code_version, sizeof j->code_version, "%016llx",
		 (unsigned long long)h);
}

/* ------------------------------------------------------------------ */
/* Loading                                                             */
/* ------------------------------------------------------------------ */

/* Turn a libyaml parser error into "FILE:LINE:COL: invalid YAML: ...". */
static int
cfg_yaml_error(struct cfg_parser *p, const yaml_parser_t *yp)
{
	int line = (int)yp->problem_mark.line + 1;
	int col = (int)yp->problem_mark.column + 1;
	char ctx[128] = "";

	if (yp->error == YAML_MEMORY_ERROR)
		xalloc_exhausted("libyaml");
	if (yp->error == YAML_READER_ERROR) {
		cfg_text_pos(p->src, yp->problem_offset < p->srclen ?
					     yp->problem_offset : p->srclen,
			     &line, &col);
		return cfg_fail_at(p, line, col, "invalid YAML: %s",
				   yp->problem ? yp->problem : "unreadable input");
	}
	if (yp->context != NULL)
		snprintf(ctx, sizeof ctx, " (%s at line %zu)", yp->context,
			 yp->context_mark.line + 1);
	return cfg_fail_at(p, line, col, "invalid YAML: %s%s",
			   yp->problem ? yp->problem : "syntax error", ctx);
}

/*
 * Refuse YAML nested deeper than CFG_DEPTH_MAX, before loading it: libyaml
 * keeps a stack per flow level that it walks for every token, so its cost
 * grows with the square of the nesting (40,000 '[' take seconds).  Walking
 * the events stops at the first level too deep, so the cost stays linear.
 * A syntax error is left to the load that follows, which reports it.
 */
static int
cfg_check_depth(struct cfg_parser *p)
{
	yaml_parser_t yp;
	yaml_event_t ev;
	int depth = 0, rc = 0;
	bool end = false;

	if (!yaml_parser_initialize(&yp))
		xalloc_exhausted("libyaml");
	yaml_parser_set_input_string(&yp, (const unsigned char *)p->src,
				     p->srclen);
	while (!end && rc == 0 && yaml_parser_parse(&yp, &ev)) {
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > CFG_DEPTH_MAX)
				rc = cfg_fail(p, ev.start_mark,
					      "nesting deeper than %d levels",
					      CFG_DEPTH_MAX);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_STREAM_END_EVENT:
			end = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&yp);
	return rc;
}

/*
 * Parse the current file into its document and walk its top level: the
 * settings table for the main file, cfg_inc_keys for an included one (an
 * empty included file holds nothing; an empty main file is an error).
 */
static int
cfg_parse_file(struct cfg_parser *p, bool included)
{
	struct cfg_src *f = p->srcs[p->cur];
	yaml_parser_t yp;
	yaml_document_t extra;
	yaml_node_t *root, *x;
	yaml_node_pair_t *pr;
	char buf[CFG_QUOTE_MAX * 4 + 16];
	int rc = -1;

	if (cfg_check_depth(p) < 0)
		return -1;
	if (!yaml_parser_initialize(&yp))
		xalloc_exhausted("libyaml");
	yaml_parser_set_input_string(&yp, (const unsigned char *)p->src,
				     p->srclen);
	if (!yaml_parser_load(&yp, &f->doc)) {
		rc = cfg_yaml_error(p, &yp);
		yaml_parser_delete(&yp);
		return rc;
	}
	f->has_doc = true;
	p->doc = &f->doc;
	root = yaml_document_get_root_node(&f->doc);
	if (root == NULL) {
		if (included)
			rc = 0;
		else
			cfg_fail_at(p, 1, 1,
				    "the configuration is empty: expected a mapping with warehouses: and jobs:");
		goto out;
	}
	if (!yaml_parser_load(&yp, &extra)) {
		cfg_yaml_error(p, &yp);
		goto out;
	}
	x = yaml_document_get_root_node(&extra);
	if (x != NULL) {
		cfg_fail(p, extra.start_mark,
			 "a second YAML document; the configuration is one document");
		yaml_document_delete(&extra);
		goto out;
	}
	yaml_document_delete(&extra);
	if (root->type != YAML_MAPPING_NODE) {
		cfg_fail(p, root->start_mark, included ?
			 "an included file must be a mapping with jobs: (and warehouses:), got %s" :
			 "the top level must be a mapping of settings (state_db:, warehouses:, jobs:, ...), got %s",
			 cfg_got(root, buf, sizeof buf));
		goto out;
	}
	cfg_set_ctx(p, "%s", "");
	if (!included) {
		rc = cfg_parse_map(p, root, cfg_top_keys, p->cfg);
		goto out;
	}
	/* a setting in an included file: say where it belongs */
	for (pr = root->data.mapping.pairs.start;
	     pr < root->data.mapping.pairs.top; pr++) {
		yaml_node_t *kn = cfg_node(p, pr->key);

		if (kn->type == YAML_SCALAR_NODE &&
		    cfg_key_find(cfg_inc_keys, cfg_text(kn)) == NULL &&
		    cfg_key_find(cfg_top_keys, cfg_text(kn)) != NULL) {
			cfg_fail(p, kn->start_mark,
				 "%s is a setting of the main configuration file, not of an included one (which holds only jobs:, warehouses: and include:); move it to %s",
				 cfg_quote(cfg_text(kn), buf, sizeof buf),
				 p->srcs[0]->file);
			goto out;
		}
	}
	rc = cfg_parse_map(p, root, cfg_inc_keys, p->cfg);
out:
	yaml_parser_delete(&yp);
	return rc;
}

/* True when an include: entry has glob(3) wildcard characters. */
static bool
cfg_has_wildcard(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* qsort: bytewise order of glob's matches, whatever the locale. */
static int
cfg_strcmp_cb(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Free one file of the configuration. */
static void
cfg_src_free(struct cfg_src *f)
{
	if (f == NULL)
		return;
	if (f->has_doc)
		yaml_document_delete(&f->doc);
	free(f->text);
	free(f->file);
	free(f->abs);
	free(f->dir);
	free(f);
}

/* "a.yaml -> b.yaml -> a.yaml": the include chain from file c down to the
 * current file, then abs, into buf. */
static const char *
cfg_include_chain(struct cfg_parser *p, int c, const char *abs, char *buf,
		  size_t n)
{
	int chain[CONFIG_INCLUDE_DEPTH + 2];
	int k = 0, i;
	size_t o = 0;

	for (i = (int)p->cur; i >= 0 && k < CONFIG_INCLUDE_DEPTH + 1;
	     i = p->srcs[i]->parent) {
		chain[k++] = i;
		if (i == c)
			break;
	}
	buf[0] = '\0';
	while (k-- > 0 && o < n)
		o += (size_t)snprintf(buf + o, n - o, "%s -> ",
				      p->srcs[chain[k]]->abs);
	if (o < n)
		snprintf(buf + o, n - o, "%s", abs);
	return buf;
}

/*
 * Read the file `path` that include: entry `it` of the current file
 * matched, and walk it.  Refused (at the entry): more than
 * CONFIG_INCLUDE_FILES files, deeper than CONFIG_INCLUDE_DEPTH, a file
 * that includes itself through any chain, a file read twice, more than
 * CONFIG_TOTAL_BYTES of YAML in all, a file that cannot be read.
 */
static int
cfg_include_file(struct cfg_parser *p, yaml_node_t *it, const char *path)
{
	struct cfg_src *parent = p->srcs[p->cur], *f;
	char buf[CFG_QUOTE_MAX * 4 + 16], why[256], chain[ERR_MSG_MAX / 2];
	char *abs;
	size_t i, me = p->cur;
	int c, rc;

	cfg_quote(cfg_text(it), buf, sizeof buf);
	if (p->nsrcs >= CONFIG_INCLUDE_FILES)
		return cfg_fail(p, it->start_mark,
				"include %s: more than %d configuration files in all; put more jobs in each file",
				buf, CONFIG_INCLUDE_FILES);
	if (parent->depth >= CONFIG_INCLUDE_DEPTH)
		return cfg_fail(p, it->start_mark,
				"include %s: includes nested deeper than %d levels; include these files from a higher level",
				buf, CONFIG_INCLUDE_DEPTH);
	abs = realpath(path, NULL);
	if (abs == NULL)
		return cfg_fail(p, it->start_mark,
				"include %s: cannot read %s: %s; create it or remove it from include:",
				buf, path, strerror(errno));
	for (c = (int)p->cur; c >= 0; c = p->srcs[c]->parent)
		if (strcmp(p->srcs[c]->abs, abs) == 0) {
			rc = cfg_fail(p, it->start_mark,
				      "include cycle %s; remove one of these includes",
				      cfg_include_chain(p, c, abs, chain,
							sizeof chain));
			free(abs);
			return rc;
		}
	for (i = 0; i < p->nsrcs; i++)
		if (strcmp(p->srcs[i]->abs, abs) == 0) {
			rc = cfg_fail(p, it->start_mark,
				      "include %s: %s is already included by %s; include each file once",
				      buf, abs, p->srcs[p->srcs[i]->parent]->file);
			free(abs);
			return rc;
		}
	f = xcalloc(1, sizeof *f);
	p->srcs = xreallocarray(p->srcs, p->nsrcs + 1, sizeof *p->srcs);
	f->abs = abs;
	f->file = xstrdup(abs);
	f->dir = cfg_dirname(abs);
	f->parent = (int)p->cur;
	f->depth = parent->depth + 1;
	f->inc_node = it;
	if (cfg_read_file(abs, CFG_FILE_MAX, &f->text, &f->len, why,
			  sizeof why) < 0) {
		rc = cfg_fail(p, it->start_mark,
			      "include %s: cannot read %s: %s", buf, abs, why);
		cfg_src_free(f);
		return rc;
	}
	if (p->total + f->len > CONFIG_TOTAL_BYTES) {
		rc = cfg_fail(p, it->start_mark,
			      "include %s: the configuration files together are more than %d bytes; make them smaller",
			      buf, CONFIG_TOTAL_BYTES);
		cfg_src_free(f);
		return rc;
	}
	p->total += f->len;
	p->srcs[p->nsrcs++] = f;
	cfg_use(p, p->nsrcs - 1);
	rc = cfg_parse_file(p, true);
	cfg_use(p, me);
	cfg_set_ctx(p, "%s", "");
	return rc;
}

/* include: each entry a file or a glob(3) pattern, relative to the file
 * that names it; a pattern's matches in bytewise order.  A file named
 * without wildcards must exist; a pattern may match nothing. */
static int
cfg_h_include(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	      yaml_node_t *key, yaml_node_t *val)
{
	size_t i, m, me = p->cur;
	char buf[CFG_QUOTE_MAX * 4 + 16];
	int rc = 0;

	for (i = 0; i < cfg_seq_len(val) && rc == 0; i++) {
		yaml_node_t *it = cfg_seq_item(p, val, i);
		glob_t g;
		char *pat;
		int gr;

		if (cfg_want_text(p, k, it) < 0)
			return -1;
		pat = cfg_resolve(p->srcs[me]->dir, cfg_text(it));
		if (!cfg_has_wildcard(cfg_text(it))) {
			rc = cfg_include_file(p, it, pat);
			free(pat);
			continue;
		}
		memset(&g, 0, sizeof g);
		gr = glob(pat, GLOB_NOSORT, NULL, &g);
		if (gr == 0) {
			qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv,
			      cfg_strcmp_cb);
			for (m = 0; m < g.gl_pathc && rc == 0; m++) {
				rc = cfg_include_file(p, it, g.gl_pathv[m]);
				cfg_use(p, me);
			}
		} else if (gr == GLOB_NOSPACE) {
			xalloc_exhausted("glob");
		} else if (gr != GLOB_NOMATCH) {
			rc = cfg_fail(p, it->start_mark,
				      "include %s: cannot list the files it matches; check the folder's permissions",
				      cfg_quote(cfg_text(it), buf, sizeof buf));
		}
		if (gr != GLOB_NOMATCH)
			globfree(&g);
		free(pat);
	}
	return rc;
}

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
static int
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
	if (cfg_link(p) < 0)
		return -1;
	for (i = 0; i < cfg->njobs; i++)
		cfg_code_version(&cfg->jobs[i]);
	return 0;
}

/*
 * A note on phases: the top-level handlers for warehouses and jobs run
 * after the scalar settings (cfg_top_keys' phase column), which is how a
 * job gets max_catchup and friends as defaults before its own keys, and
 * how max_connections defaults to min(max_concurrency, 4).
 */

/* Free a config and everything it holds. */
static void
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

/* cluster_hash: file_hash's bytes without the lines of node: (each node
 * may name itself), so that nodes sharing one configuration agree. */
static void
cfg_cluster_hash(struct cfg_parser *p, const char *text, size_t len)
{
	uint64_t h;
	size_t i, s = len, e = len;

	if (p->node_e > p->node_s && p->node_e <= len) {
		s = p->node_s;
		e = p->node_e;
	}
	h = cfg_fnv(CFG_FNV_INIT, text, s);
	h = cfg_fnv(h, text + e, len - e);
	for (i = 1; i < p->nsrcs; i++) {
		h = cfg_fnv(h, p->srcs[i]->abs, strlen(p->srcs[i]->abs) + 1);
		h = cfg_fnv(h, p->srcs[i]->text, p->srcs[i]->len);
	}
	snprintf(p->cfg->cluster_hash, sizeof p->cfg->cluster_hash, "%016llx",
		 (unsigned long long)h);
}

/* Load from bytes; abs is the file's absolute path (taken over). */
static int
config_load_bytes(const char *path, char *abs, const char *text, size_t len,
		  struct config **out, struct err *err)
{
	struct cfg_parser p;
	struct config *cfg;
	uint64_t h;
	size_t i;
	int rc;

	*out = NULL;
	memset(&p, 0, sizeof p);
	p.file = path;
	p.src = text;
	p.srclen = len;
	p.err = err;
	cfg = xcalloc(1, sizeof *cfg);
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
	p.cfg = cfg;
	p.srcs = xcalloc(1, sizeof *p.srcs);
	p.srcs[0] = xcalloc(1, sizeof **p.srcs);
	p.nsrcs = 1;
	p.srcs[0]->parent = -1;
	p.srcs[0]->file = xstrdup(path);
	p.srcs[0]->abs = xstrdup(abs);
	p.srcs[0]->dir = xstrdup(cfg->dir);
	p.srcs[0]->text = xmalloc(len + 1);
	memcpy(p.srcs[0]->text, text, len);
	p.srcs[0]->text[len] = '\0';
	p.srcs[0]->len = len;
	p.total = len;
	rc = cfg_load_doc(&p);
	if (rc == 0) {
		/* the main file's bytes, then each included file's path and
		 * bytes: a configuration without include: hashes as before */
		h = cfg_fnv(CFG_FNV_INIT, text, len);
		for (i = 1; i < p.nsrcs; i++) {
			h = cfg_fnv(h, p.srcs[i]->abs, strlen(p.srcs[i]->abs) + 1);
			h = cfg_fnv(h, p.srcs[i]->text, p.srcs[i]->len);
		}
		snprintf(cfg->file_hash, sizeof cfg->file_hash, "%016llx",
			 (unsigned long long)h);
		cfg_cluster_hash(&p, text, len);
	}
	for (i = 0; i < p.nsrcs; i++)
		cfg_src_free(p.srcs[i]);
	free(p.srcs);
	free(p.job_nodes);
	free(p.job_src);
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
	char *text, why[256];
	size_t len;
	int rc;

	*out = NULL;
	if (cfg_read_file(path, CFG_FILE_MAX, &text, &len, why, sizeof why) < 0)
		return err_set(err, EXIT_BAD_INPUT,
			       "%s: cannot read the configuration: %s", path,
			       why);
	rc = config_load_bytes(path, cfg_abs_path(path, true), text, len, out,
			       err);
	free(text);
	return rc;
}

/* The value of a "socket:" line read alone (a file that is not YAML):
 * unquoted, its comment cut; NULL when the text has no such line. */
static char *
cfg_socket_line(const char *text, size_t len, int *lineno)
{
	const char *p = text, *end = text + len, *eol, *v, *ve;

	for (*lineno = 1; p < end; p = eol + 1, (*lineno)++) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		if ((size_t)(eol - p) < 7 || strncmp(p, "socket:", 7) != 0)
			continue;
		for (v = p + 7; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		if (v < eol && (*v == '"' || *v == '\'')) {
			ve = memchr(v + 1, *v, (size_t)(eol - v - 1));
			if (ve == NULL)
				continue;
			v++;
		} else {
			for (ve = v; ve < eol && *ve != '\r' &&
			     !(*ve == '#' && ve > v && (ve[-1] == ' ' ||
			     ve[-1] == '\t')); ve++)
				;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
		}
		if (ve > v && memchr(v, '\0', (size_t)(ve - v)) == NULL)
			return xstrndup(v, (size_t)(ve - v));
	}
	return NULL;
}

int
config_socket_string(const char *path, const char *text, size_t len,
		     char **socket, char *warn, size_t wsize, struct err *err)
{
	char *abs = cfg_abs_path(path, true), *dir = cfg_dirname(abs), *v = NULL;
	yaml_parser_t yp;
	yaml_event_t ev;
	int depth = 0, item = 0, rc = 0, line;
	bool want = false, done = false;

	*socket = NULL;
	if (wsize > 0)
		warn[0] = '\0';
	if (!yaml_parser_initialize(&yp))
		xalloc_exhausted("libyaml");
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	while (!done) {
		if (!yaml_parser_parse(&yp, &ev)) {
			if (yp.error == YAML_MEMORY_ERROR)
				xalloc_exhausted("libyaml");
			/* not YAML: its socket: line read alone */
			v = cfg_socket_line(text, len, &line);
			snprintf(warn, wsize, "%s:%zu:%zu: invalid YAML: %s;"
				 " %s", path, yp.problem_mark.line + 1,
				 yp.problem_mark.column + 1,
				 yp.problem ? yp.problem : "syntax error",
				 v != NULL ? "read its socket: line alone" :
				 "it has no socket: line, the default is used");
			break;
		}
		switch (ev.type) {
		case YAML_SCALAR_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			/* an item of the top-level mapping: key, value, ... */
			if (depth == 1 && item++ % 2 == 0) {
				want = ev.type == YAML_SCALAR_EVENT &&
				    strcmp((char *)ev.data.scalar.value,
				    "socket") == 0;
			} else if (depth == 1 && want) {
				if (ev.type != YAML_SCALAR_EVENT ||
				    ev.data.scalar.length == 0) {
					rc = err_set(err, EXIT_BAD_INPUT,
					    "%s:%zu:%zu: socket must be a socket"
					    " path, got %s", path,
					    ev.start_mark.line + 1,
					    ev.start_mark.column + 1,
					    ev.type == YAML_SCALAR_EVENT ?
					    "nothing" : ev.type ==
					    YAML_SEQUENCE_START_EVENT ?
					    "a sequence" : "a mapping");
				} else {
					v = xstrndup((char *)ev.data.scalar.value,
						     ev.data.scalar.length);
				}
				done = true;
			}
			if (ev.type != YAML_SCALAR_EVENT &&
			    ++depth > CFG_DEPTH_MAX)
				done = true;   /* not worth reading further */
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			/* the end of the top-level mapping ends the search */
			if (--depth == 0)
				done = true;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&yp);
	if (rc == 0 && v != NULL)
		*socket = cfg_resolve(dir, v);
	free(v);
	free(dir);
	free(abs);
	return rc;
}

int
config_socket(const char *path, char **socket, char *warn, size_t wsize,
	      struct err *err)
{
	char *text, why[256];
	size_t len;
	int rc;

	*socket = NULL;
	if (cfg_read_file(path, CFG_FILE_MAX, &text, &len, why, sizeof why) < 0)
		return err_set(err, EXIT_BAD_INPUT,
			       "%s: cannot read the configuration: %s", path,
			       why);
	rc = config_socket_string(path, text, len, socket, warn, wsize, err);
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
