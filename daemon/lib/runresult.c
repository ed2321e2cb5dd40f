/*
 * runresult.c - the result of a run on another node (runresult.h).
 *
 * Writing goes through json.c.  Reading is a small recursive-descent
 * JSON reader over the NUL-terminated text: every loop stops at the NUL,
 * every array and string is counted against the bounds of runresult.h,
 * and nesting is bounded, so a garbled or hostile text costs at most its
 * own length in memory and is refused as a whole.
 */
#include "runresult.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "xalloc.h"

/* Names and details are cut to this many bytes when written: json_str
 * may turn each byte that is not UTF-8 into U+FFFD (3 bytes), which
 * still reads back within RUNRESULT_STR_MAX. */
#define RUNRESULT_STR_CUT (RUNRESULT_STR_MAX / 4)

/* ------------------------------------------------------------- writing */

/* s as a JSON string, cut to RUNRESULT_STR_CUT - 1 bytes at a character. */
static void
runresult_put_str(struct buf *b, const char *s)
{
	size_t n;
	char *cut;

	if (s == NULL || (n = strlen(s)) < RUNRESULT_STR_CUT) {
		json_str(b, s);
		return;
	}
	n = RUNRESULT_STR_CUT - 1;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	cut = xstrndup(s, n);
	json_str(b, cut);
	free(cut);
}

/* A measured number, or null; NaN and infinities as strings. */
static void
runresult_put_num(struct buf *b, bool has, double v)
{
	if (!has)
		buf_addstr(b, "null");
	else if (isnan(v))
		buf_addstr(b, "\"nan\"");
	else if (isinf(v))
		buf_addstr(b, v > 0 ? "\"inf\"" : "\"-inf\"");
	else
		buf_printf(b, "%.17g", v);
}

/* A row count, or null. */
static void
runresult_put_int(struct buf *b, bool has, int64_t v)
{
	if (has)
		buf_printf(b, "%" PRId64, v);
	else
		buf_addstr(b, "null");
}

/* The guardrail figures of one partition. */
static void
runresult_put_guard(struct buf *b, const struct runresult_guard *g)
{
	size_t nm = g->nmetrics < RUNRESULT_MAX_METRICS ? g->nmetrics :
		    RUNRESULT_MAX_METRICS;

	buf_addstr(b, "{\"rows_before\": ");
	runresult_put_int(b, g->has_rows_before, g->rows_before);
	buf_addstr(b, ", \"rows_after\": ");
	runresult_put_int(b, g->has_rows_after, g->rows_after);
	if (g->sum_before[0] != '\0' || g->sum_after[0] != '\0') {
		buf_addstr(b, ", \"sum_before\": ");
		runresult_put_str(b, g->sum_before);
		buf_addstr(b, ", \"sum_after\": ");
		runresult_put_str(b, g->sum_after);
	}
	buf_addstr(b, ", \"metrics\": [");
	for (size_t k = 0; k < nm; k++) {
		const struct runresult_metric *m = &g->metrics[k];

		buf_addstr(b, k ? ", {\"before\": " : "{\"before\": ");
		runresult_put_num(b, m->has_before, m->before);
		buf_addstr(b, ", \"after\": ");
		runresult_put_num(b, m->has_after, m->after);
		buf_addstr(b, ", \"change_pct\": ");
		runresult_put_num(b, m->has_change, m->change_pct);
		buf_addstr(b, "}");
	}
	buf_addstr(b, "]}");
}

void
runresult_format(const struct runresult *r, struct buf *out)
{
	size_t nc = r->nchecks < RUNRESULT_MAX_CHECKS ? r->nchecks :
		    RUNRESULT_MAX_CHECKS;
	size_t ng = r->nguards < RUNRESULT_MAX_PARTS ? r->nguards :
		    RUNRESULT_MAX_PARTS;

	buf_printf(out, "{\"timed_out\": %s, \"not_started\": %s,"
		   " \"cancelled\": %s, \"committed_before\": %s,"
		   " \"rows_changed\": %" PRId64 ", \"checks\": [",
		   r->timed_out ? "true" : "false",
		   r->not_started ? "true" : "false",
		   r->cancelled ? "true" : "false",
		   r->committed_before ? "true" : "false",
		   r->rows_changed < 0 ? -1 : r->rows_changed);
	for (size_t i = 0; i < nc; i++) {
		const struct runresult_check *c = &r->checks[i];

		buf_addstr(out, i ? ", {\"name\": " : "{\"name\": ");
		runresult_put_str(out, c->name != NULL ? c->name : "");
		buf_printf(out, ", \"passed\": %s, \"detail\": ",
			   c->passed ? "true" : "false");
		runresult_put_str(out, c->detail);
		buf_printf(out, ", \"part\": %zu%s", c->part,
			   c->warn ? ", \"warn\": true" : "");
		if (c->recon) {
			buf_addstr(out, ", \"recon\": true, \"source\": ");
			runresult_put_num(out, c->has_source, c->source);
			buf_addstr(out, ", \"target\": ");
			runresult_put_num(out, c->has_target, c->target);
			buf_addstr(out, ", \"difference\": ");
			runresult_put_num(out, true, c->diff);
		}
		if (c->trend) {
			buf_addstr(out, ", \"trend\": true, \"target\": ");
			runresult_put_num(out, c->has_target, c->target);
			buf_printf(out, ", \"history\": %" PRId64 ", \"mean\": ",
				   c->history);
			runresult_put_num(out, true, c->mean);
			buf_addstr(out, ", \"sd\": ");
			runresult_put_num(out, true, c->sd);
			buf_addstr(out, ", \"sigma\": ");
			runresult_put_num(out, c->has_sigma, c->sigma);
		}
		buf_addstr(out, "}");
	}
	buf_addstr(out, "]");
	if (r->guards != NULL) {
		buf_addstr(out, ", \"guards\": [");
		for (size_t i = 0; i < ng; i++) {
			if (i)
				buf_addstr(out, ", ");
			runresult_put_guard(out, &r->guards[i]);
		}
		buf_addstr(out, "]");
	}
	buf_addstr(out, "}");
}

/* ------------------------------------------------------------- reading */

/* The reader's position; err is filled by the first failure. */
struct rr_in {
	const char *start, *p;
	int depth;
	struct err *err;
};

/* Fail at the current position. */
static int
rr_fail(struct rr_in *in, const char *what)
{
	return err_set(in->err, EXIT_BAD_INPUT, "a malformed run result: %s"
		       " at byte %td", what, in->p - in->start);
}

/* Skip JSON white space; the next byte. */
static char
rr_peek(struct rr_in *in)
{
	while (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' ||
	       *in->p == '\r')
		in->p++;
	return *in->p;
}

/* The byte c, after white space. */
static int
rr_expect(struct rr_in *in, char c)
{
	char what[32];

	if (rr_peek(in) != c) {
		snprintf(what, sizeof what, "'%c' expected", c);
		return rr_fail(in, what);
	}
	in->p++;
	return 0;
}

/* The literal word (true, false, null) if it comes next: 1, else 0. */
static int
rr_word(struct rr_in *in, const char *word)
{
	size_t n = strlen(word);

	rr_peek(in);
	if (strncmp(in->p, word, n) != 0)
		return 0;
	in->p += n;
	return 1;
}

/* Four hex digits of a \u escape into *cp. */
static int
rr_hex4(struct rr_in *in, unsigned *cp)
{
	*cp = 0;
	for (int i = 0; i < 4; i++) {
		char c = *in->p;

		if (c >= '0' && c <= '9')
			*cp = *cp * 16 + (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*cp = *cp * 16 + (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*cp = *cp * 16 + (unsigned)(c - 'A' + 10);
		else
			return rr_fail(in, "a bad \\u escape");
		in->p++;
	}
	return 0;
}

/* A \u escape (after the backslash and u), as UTF-8 into out. */
static int
rr_unicode(struct rr_in *in, struct buf *out)
{
	unsigned cp, lo;
	char u[4];
	size_t n;

	if (rr_hex4(in, &cp) < 0)
		return -1;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return rr_fail(in, "a lone low surrogate");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (in->p[0] != '\\' || in->p[1] != 'u')
			return rr_fail(in, "a lone high surrogate");
		in->p += 2;
		if (rr_hex4(in, &lo) < 0)
			return -1;
		if (lo < 0xdc00 || lo > 0xdfff)
			return rr_fail(in, "a lone high surrogate");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp == 0)
		return rr_fail(in, "a NUL in a string");
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	buf_add(out, u, n);
	return 0;
}

/* One escape (after the backslash) into out. */
static int
rr_escape(struct rr_in *in, struct buf *out)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e;
	char c = *in->p;

	if (c == 'u') {
		in->p++;
		return rr_unicode(in, out);
	}
	if (c == '\0' || (e = strchr(from, c)) == NULL)
		return rr_fail(in, "a bad escape");
	buf_add(out, &to[e - from], 1);
	in->p++;
	return 0;
}

/* A string into *out (allocated; NULL to skip it), at most
 * RUNRESULT_STR_MAX bytes once read. */
static int
rr_string(struct rr_in *in, char **out)
{
	struct buf b;
	int rc = 0;

	if (rr_expect(in, '"') < 0)
		return -1;
	buf_init(&b);
	buf_add(&b, "", 0);
	while (rc == 0 && *in->p != '"') {
		unsigned char c = (unsigned char)*in->p;

		if (c == '\0')
			rc = rr_fail(in, "an unterminated string");
		else if (c < 0x20)
			rc = rr_fail(in, "a control character in a string");
		else if (c == '\\') {
			in->p++;
			rc = rr_escape(in, &b);
		} else {
			buf_add(&b, in->p++, 1);
		}
		if (rc == 0 && b.len > RUNRESULT_STR_MAX)
			rc = rr_fail(in, "a string too long");
	}
	if (rc == 0) {
		in->p++;
		if (out != NULL)
			*out = buf_steal(&b);
	}
	buf_free(&b);
	return rc;
}

/* The text of a JSON number into tok (NUL-terminated). */
static int
rr_number_token(struct rr_in *in, char tok[64])
{
	size_t n = 0;

	rr_peek(in);
	if (*in->p != '-' && (*in->p < '0' || *in->p > '9'))
		return rr_fail(in, "a number expected");
	while (strchr("-+.eE0123456789", *in->p) != NULL && *in->p != '\0') {
		if (n == 63)
			return rr_fail(in, "a number too long");
		tok[n++] = *in->p++;
	}
	tok[n] = '\0';
	return 0;
}

/* An integer (a row count) into *v. */
static int
rr_int(struct rr_in *in, int64_t *v)
{
	char tok[64], *end;
	long long x;

	if (rr_number_token(in, tok) < 0)
		return -1;
	errno = 0;
	x = strtoll(tok, &end, 10);
	if (*end != '\0' || errno != 0)
		return rr_fail(in, "an integer expected");
	*v = x;
	return 0;
}

/* An integer or null into *has, *v. */
static int
rr_opt_int(struct rr_in *in, bool *has, int64_t *v)
{
	*has = false;
	*v = 0;
	if (rr_word(in, "null"))
		return 0;
	*has = true;
	return rr_int(in, v);
}

/* A number, null, or "nan" "inf" "-inf" into *has, *v. */
static int
rr_opt_num(struct rr_in *in, bool *has, double *v)
{
	char tok[64], *end, *s = NULL;

	*has = false;
	*v = 0;
	if (rr_word(in, "null"))
		return 0;
	*has = true;
	if (rr_peek(in) == '"') {
		if (rr_string(in, &s) < 0)
			return -1;
		if (strcmp(s, "nan") == 0)
			*v = NAN;
		else if (strcmp(s, "inf") == 0 || strcmp(s, "-inf") == 0)
			*v = s[0] == '-' ? -INFINITY : INFINITY;
		else
			*has = false;
		free(s);
		return *has ? 0 : rr_fail(in, "a number expected");
	}
	if (rr_number_token(in, tok) < 0)
		return -1;
	*v = strtod(tok, &end);
	if (*end != '\0' || !isfinite(*v))
		return rr_fail(in, "a number expected");
	return 0;
}

/* true or false into *v. */
static int
rr_bool(struct rr_in *in, bool *v)
{
	if (rr_word(in, "true"))
		*v = true;
	else if (rr_word(in, "false"))
		*v = false;
	else
		return rr_fail(in, "true or false expected");
	return 0;
}

static int rr_skip(struct rr_in *in);

/* A member's value of an object: called with its key. */
typedef int rr_member_fn(struct rr_in *in, const char *key, void *arg);
/* An element of an array. */
typedef int rr_elem_fn(struct rr_in *in, void *arg);

/* An object, each member handed to fn. */
static int
rr_object(struct rr_in *in, rr_member_fn *fn, void *arg)
{
	char *key;
	int rc;

	if (rr_expect(in, '{') < 0)
		return -1;
	if (++in->depth > RUNRESULT_MAX_DEPTH)
		return rr_fail(in, "nested too deep");
	if (rr_peek(in) == '}') {
		in->p++;
		in->depth--;
		return 0;
	}
	for (;;) {
		if (rr_string(in, &key) < 0)
			return -1;
		rc = rr_expect(in, ':');
		if (rc == 0)
			rc = fn(in, key, arg);
		free(key);
		if (rc < 0)
			return -1;
		if (rr_peek(in) == '}')
			break;
		if (rr_expect(in, ',') < 0)
			return -1;
	}
	in->p++;
	in->depth--;
	return 0;
}

/* An array, each element handed to fn. */
static int
rr_array(struct rr_in *in, rr_elem_fn *fn, void *arg)
{
	if (rr_expect(in, '[') < 0)
		return -1;
	if (++in->depth > RUNRESULT_MAX_DEPTH)
		return rr_fail(in, "nested too deep");
	if (rr_peek(in) == ']') {
		in->p++;
		in->depth--;
		return 0;
	}
	for (;;) {
		if (fn(in, arg) < 0)
			return -1;
		if (rr_peek(in) == ']')
			break;
		if (rr_expect(in, ',') < 0)
			return -1;
	}
	in->p++;
	in->depth--;
	return 0;
}

/* Skip a member of an unknown key. */
static int
rr_skip_member(struct rr_in *in, const char *key, void *arg)
{
	(void)key;
	(void)arg;
	return rr_skip(in);
}

/* Skip an element of an unknown array. */
static int
rr_skip_elem(struct rr_in *in, void *arg)
{
	(void)arg;
	return rr_skip(in);
}

/* Skip any value. */
static int
rr_skip(struct rr_in *in)
{
	bool has;
	double v;

	switch (rr_peek(in)) {
	case '{':
		return rr_object(in, rr_skip_member, NULL);
	case '[':
		return rr_array(in, rr_skip_elem, NULL);
	case '"':
		return rr_string(in, NULL);
	case 't':
	case 'f':
		return rr_bool(in, &has);
	default:
		return rr_opt_num(in, &has, &v);
	}
}

/* A member of a check. */
static int
rr_check_member(struct rr_in *in, const char *key, void *arg)
{
	struct runresult_check *c = arg;
	int64_t part = 0;
	char *s = NULL;

	if (strcmp(key, "name") == 0 || strcmp(key, "detail") == 0) {
		if (!rr_word(in, "null") && rr_string(in, &s) < 0)
			return -1;
		if (key[0] == 'n') {
			free(c->name);
			c->name = s;
		} else {
			free(c->detail);
			c->detail = s;
		}
		return 0;
	}
	if (strcmp(key, "passed") == 0)
		return rr_bool(in, &c->passed);
	if (strcmp(key, "warn") == 0)
		return rr_bool(in, &c->warn);
	if (strcmp(key, "recon") == 0)
		return rr_bool(in, &c->recon);
	if (strcmp(key, "trend") == 0)
		return rr_bool(in, &c->trend);
	if (strcmp(key, "history") == 0)
		return rr_int(in, &c->history);
	if (strcmp(key, "mean") == 0 || strcmp(key, "sd") == 0 ||
	    strcmp(key, "sigma") == 0) {
		bool has;
		double v = 0;

		if (rr_opt_num(in, &has, &v) < 0)
			return -1;
		if (key[0] == 'm')
			c->mean = v;
		else if (key[1] == 'd')
			c->sd = v;
		else {
			c->sigma = v;
			c->has_sigma = has;
		}
		return 0;
	}
	if (strcmp(key, "source") == 0)
		return rr_opt_num(in, &c->has_source, &c->source);
	if (strcmp(key, "target") == 0)
		return rr_opt_num(in, &c->has_target, &c->target);
	if (strcmp(key, "difference") == 0) {
		bool has;

		return rr_opt_num(in, &has, &c->diff);
	}
	if (strcmp(key, "part") == 0) {
		if (rr_int(in, &part) < 0)
			return -1;
		if (part < 0 || part >= RUNRESULT_MAX_PARTS)
			return rr_fail(in, "a check's part out of range");
		c->part = (size_t)part;
		return 0;
	}
	return rr_skip(in);
}

/* Append a zeroed element to an array of n elements of `size` bytes that
 * doubles as it grows; returns the new element. */
static void *
rr_append(void *arrp, size_t n, size_t size)
{
	void **arr = arrp;
	char *el;

	if ((n & (n - 1)) == 0)
		*arr = xreallocarray(*arr, n ? n * 2 : 1, size);
	el = (char *)*arr + n * size;
	memset(el, 0, size);
	return el;
}

/* A check: name required; detail "" when absent. */
static int
rr_check(struct rr_in *in, void *arg)
{
	struct runresult *r = arg;
	struct runresult_check *c;

	if (r->nchecks == RUNRESULT_MAX_CHECKS)
		return rr_fail(in, "too many checks");
	c = rr_append(&r->checks, r->nchecks++, sizeof *r->checks);
	if (rr_object(in, rr_check_member, c) < 0)
		return -1;
	if (c->name == NULL)
		return rr_fail(in, "a check without a name");
	if (c->detail == NULL)
		c->detail = xstrdup("");
	return 0;
}

/* A member of a metric. */
static int
rr_metric_member(struct rr_in *in, const char *key, void *arg)
{
	struct runresult_metric *m = arg;

	if (strcmp(key, "before") == 0)
		return rr_opt_num(in, &m->has_before, &m->before);
	if (strcmp(key, "after") == 0)
		return rr_opt_num(in, &m->has_after, &m->after);
	if (strcmp(key, "change_pct") == 0)
		return rr_opt_num(in, &m->has_change, &m->change_pct);
	return rr_skip(in);
}

/* A metric of a guard. */
static int
rr_metric(struct rr_in *in, void *arg)
{
	struct runresult_guard *g = arg;
	struct runresult_metric *m;

	if (g->nmetrics == RUNRESULT_MAX_METRICS)
		return rr_fail(in, "too many metrics");
	m = rr_append(&g->metrics, g->nmetrics++, sizeof *g->metrics);
	return rr_object(in, rr_metric_member, m);
}

/* A checksum: a string of at most RUNRESULT_SUM_MAX - 1 bytes. */
static int
rr_sum(struct rr_in *in, char out[RUNRESULT_SUM_MAX])
{
	char *s = NULL;

	if (rr_string(in, &s) < 0)
		return -1;
	if (strlen(s) >= RUNRESULT_SUM_MAX) {
		free(s);
		return rr_fail(in, "checksum too long");
	}
	memcpy(out, s, strlen(s) + 1);
	free(s);
	return 0;
}

/* A member of a guard. */
static int
rr_guard_member(struct rr_in *in, const char *key, void *arg)
{
	struct runresult_guard *g = arg;

	if (strcmp(key, "rows_before") == 0)
		return rr_opt_int(in, &g->has_rows_before, &g->rows_before);
	if (strcmp(key, "rows_after") == 0)
		return rr_opt_int(in, &g->has_rows_after, &g->rows_after);
	if (strcmp(key, "sum_before") == 0)
		return rr_sum(in, g->sum_before);
	if (strcmp(key, "sum_after") == 0)
		return rr_sum(in, g->sum_after);
	if (strcmp(key, "metrics") == 0)
		return rr_array(in, rr_metric, g);
	return rr_skip(in);
}

/* The guard of one partition. */
static int
rr_guard(struct rr_in *in, void *arg)
{
	struct runresult *r = arg;
	struct runresult_guard *g;

	if (r->nguards == RUNRESULT_MAX_PARTS)
		return rr_fail(in, "too many guards");
	g = rr_append(&r->guards, r->nguards++, sizeof *r->guards);
	return rr_object(in, rr_guard_member, g);
}

/* A member of the result. */
static int
rr_result_member(struct rr_in *in, const char *key, void *arg)
{
	struct runresult *r = arg;

	if (strcmp(key, "timed_out") == 0)
		return rr_bool(in, &r->timed_out);
	if (strcmp(key, "not_started") == 0)
		return rr_bool(in, &r->not_started);
	if (strcmp(key, "cancelled") == 0)
		return rr_bool(in, &r->cancelled);
	if (strcmp(key, "committed_before") == 0)
		return rr_bool(in, &r->committed_before);
	if (strcmp(key, "rows_changed") == 0) {
		if (rr_word(in, "null")) {
			r->rows_changed = -1;
			return 0;
		}
		if (rr_int(in, &r->rows_changed) < 0)
			return -1;
		if (r->rows_changed < 0)
			r->rows_changed = -1;
		return 0;
	}
	if (strcmp(key, "checks") == 0)
		return rr_array(in, rr_check, r);
	if (strcmp(key, "guards") == 0) {
		if (rr_word(in, "null"))
			return 0;
		if (r->guards == NULL)
			r->guards = xcalloc(1, sizeof *r->guards);
		return rr_array(in, rr_guard, r);
	}
	return rr_skip(in);
}

/* One key=value field of an earlier worker's line, integer value. */
static int
runresult_field(const char *f, size_t n, struct runresult *r)
{
	char tmp[64], *eq, *end;
	long long v;

	if (n >= sizeof tmp)
		return -1;
	memcpy(tmp, f, n);
	tmp[n] = '\0';
	if ((eq = strchr(tmp, '=')) == NULL || eq[1] == '\0')
		return -1;
	*eq = '\0';
	errno = 0;
	v = strtoll(eq + 1, &end, 10);
	if (*end != '\0' || errno != 0)
		return -1;
	if (strcmp(tmp, "timed_out") == 0)
		r->timed_out = v != 0;
	else if (strcmp(tmp, "not_started") == 0)
		r->not_started = v != 0;
	else if (strcmp(tmp, "rows_changed") == 0)
		r->rows_changed = v < 0 ? -1 : v;
	else if (strcmp(tmp, "committed_before") == 0)
		r->committed_before = v != 0;
	return 0;
}

/* An earlier worker's line: "key=value" fields separated by spaces. */
static int
runresult_parse_line(const char *line, struct runresult *r, struct err *err)
{
	while (*line != '\0') {
		size_t n;

		line += strspn(line, " ");
		n = strcspn(line, " ");
		if (n > 0 && runresult_field(line, n, r) < 0)
			return err_set(err, EXIT_BAD_INPUT, "a malformed run"
				       " result: field %.*s", (int)(n < 64 ?
				       n : 64), line);
		line += n;
	}
	return 0;
}

int
runresult_parse(const char *text, struct runresult *r, struct err *err)
{
	struct rr_in in = {text, text, 0, err};
	int rc;

	memset(r, 0, sizeof *r);
	r->rows_changed = -1;
	if (text == NULL || rr_peek(&in) == '\0')
		return 0;
	if (*in.p != '{')
		rc = runresult_parse_line(text, r, err);
	else if ((rc = rr_object(&in, rr_result_member, r)) == 0 &&
		 rr_peek(&in) != '\0')
		rc = rr_fail(&in, "text after the object");
	if (rc < 0)
		runresult_clear(r);
	return rc;
}

void
runresult_clear(struct runresult *r)
{
	for (size_t i = 0; i < r->nchecks; i++) {
		free(r->checks[i].name);
		free(r->checks[i].detail);
	}
	free(r->checks);
	for (size_t i = 0; i < r->nguards; i++)
		free(r->guards[i].metrics);
	free(r->guards);
	memset(r, 0, sizeof *r);
	r->rows_changed = -1;
}
