/*
 * config_value.c - the generic handlers of the key tables (a string, a
 * path, an integer, a duration, a boolean, a number, a sequence of strings,
 * an argv, a severity) and the value parsers they share.  A key whose value
 * is one of these needs no handler of its own: its row names the handler
 * and the field's offset.
 */
#include "config_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "severity.h"
#include "xalloc.h"

/*
 * True when s is a number written in decimal: an optional sign, digits
 * without a leading zero (0 itself, 0.5), and with frac a fraction and an
 * exponent (1.5, .5, 2e3).  Hex (0x10), octal (010, 0o10), inf, nan and
 * separators (1_000) are refused: strtod and YAML 1.1 would read them
 * otherwise than a reader of the file does.
 */
bool
cfg_decimal(const char *s, bool frac)
{
	const char *c = s, *d;

	if (*c == '-' || (frac && *c == '+'))
		c++;
	d = c;
	while (*c >= '0' && *c <= '9')
		c++;
	if (c - d > 1 && d[0] == '0')
		return false;
	if (!frac)
		return c > d && *c == '\0';
	if (*c == '.') {
		const char *f = ++c;

		while (*c >= '0' && *c <= '9')
			c++;
		if (c == f && f - 1 == d)
			return false;
	} else if (c == d) {
		return false;
	}
	if (*c == 'e' || *c == 'E') {
		const char *e;

		c++;
		if (*c == '-' || *c == '+')
			c++;
		e = c;
		while (*c >= '0' && *c <= '9')
			c++;
		if (c == e)
			return false;
	}
	return *c == '\0';
}

/* Parse a whole decimal integer (optional '-', no leading zero); false on
 * anything else. */
bool
cfg_parse_int64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!cfg_decimal(s, false))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

/*
 * A number or a boolean must be a plain YAML scalar (3, true): a quoted
 * one ("3", '3') is a string, and a string where a number or a boolean
 * is expected is refused, at the value.  0 when val is plain.
 */
int
cfg_want_plain(struct cfg_parser *p, const struct cfg_key *k,
	       yaml_node_t *val)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];

	if (val->type != YAML_SCALAR_NODE)
		return cfg_bad_value(p, k, val);
	if (val->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return cfg_fail(p, val->start_mark, "%s%s must be %s, got %s, a"
			" quoted string: write the value without quotes",
			p->pfx, k->name, k->what,
			cfg_quote(cfg_text(val), buf, sizeof buf));
}

/* Valid job or warehouse name: [A-Za-z0-9_][A-Za-z0-9_.-]*, at most 64. */
bool
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

/* A non-empty string without NUL bytes, or an error. */
int
cfg_want_text(struct cfg_parser *p, const struct cfg_key *k, yaml_node_t *val)
{
	if (val->type != YAML_SCALAR_NODE || cfg_is_null(val) ||
	    cfg_text(val)[0] == '\0' ||
	    strlen(cfg_text(val)) != val->data.scalar.length)
		return cfg_bad_value(p, k, val);
	return 0;
}

/* A string into a char * field. */
int
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
int
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
int
cfg_h_int(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	  yaml_node_t *key, yaml_node_t *val)
{
	int64_t v;

	if (cfg_want_plain(p, k, val) < 0)
		return -1;
	if (!cfg_parse_int64(cfg_text(val), &v) || v < (int64_t)k->off2 ||
	    v > INT_MAX)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, int) = (int)v;
	return 0;
}

/* A non-negative integer into an int64_t field. */
int
cfg_h_int64(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	int64_t v;

	if (cfg_want_plain(p, k, val) < 0)
		return -1;
	if (!cfg_parse_int64(cfg_text(val), &v) || v < 0)
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, int64_t) = v;
	return 0;
}

/* A duration ("30s", "15m", "2h", "1d") into an int64_t field (seconds). */
int
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
int
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
int
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
int
cfg_h_bool(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	   yaml_node_t *key, yaml_node_t *val)
{
	const char *s = cfg_text(val);

	if (cfg_want_plain(p, k, val) < 0)
		return -1;
	if (strcmp(s, "true") == 0)
		*CFG_FIELD(obj, k->off, bool) = true;
	else if (strcmp(s, "false") == 0)
		*CFG_FIELD(obj, k->off, bool) = false;
	else
		return cfg_bad_value(p, k, val);
	return 0;
}

/* A sequence of non-empty strings into char ** (off) and size_t (off2). */
int
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
int
cfg_h_later(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	    yaml_node_t *key, yaml_node_t *val)
{
	return cfg_want_text(p, k, val);
}

/*
 * Take the name of a warehouse or job (what) from val into *name: text, a
 * valid name, and not the name of an earlier one (dup: where that one
 * is, or NULL; dupfile: the file that defines it), checked in that order.
 * A duplicate in another file names both places in full.
 */
int
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

/* A finite number written in decimal (cfg_decimal), the whole of t. */
bool
cfg_real(const char *t, double *v)
{
	char *end;

	if (!cfg_decimal(t, true))
		return false;
	errno = 0;
	*v = strtod(t, &end);
	return end != t && *end == '\0' && errno == 0 && isfinite(*v);
}

/* A finite number (YAML int or float) into a double; off2 names the
 * bool field that says it was given. */
int
cfg_h_number(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	     yaml_node_t *key, yaml_node_t *val)
{
	double v;

	(void)key;
	if (cfg_want_plain(p, k, val) < 0)
		return -1;
	if (!cfg_real(cfg_text(val), &v))
		return cfg_bad_value(p, k, val);
	*CFG_FIELD(obj, k->off, double) = v;
	*CFG_FIELD(obj, k->off2, bool) = true;
	return 0;
}

/*
 * An argv (command:, the hooks): a non-empty sequence of strings, the
 * first non-empty, none holding a NUL; each element checked by ok (may be
 * NULL), which returns -1 after reporting.  Fills *argv (NULL-terminated)
 * and *argc.
 */
int
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

/* severity: error or warn (severity.h), into a bool at k->off. */
int
cfg_h_severity(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	       yaml_node_t *key, yaml_node_t *val)
{
	(void)key;
	if (severity_parse(cfg_text(val), (bool *)((char *)obj + k->off)) < 0)
		return cfg_bad_value(p, k, val);
	return 0;
}
