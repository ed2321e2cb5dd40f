/*
 * runresult.c - the result of a run on another node (runresult.h).
 *
 * Writing goes through json.c.  Reading is jansson's (json_loads, strict
 * RFC 8259: valid UTF-8, no NUL in a string, no text after the object,
 * integers that fit in 64 bits, reals that stay finite), then one walk
 * that holds the whole tree, unknown members included, to the bounds of
 * runresult.h (nesting, string length), then typed lookups of the known
 * members.  jansson stops nesting at its own JSON_PARSER_MAX_DEPTH (2048)
 * without deep recursion, so a garbled or hostile text costs memory in
 * proportion to its length (jansson's tree: a few dozen bytes a value)
 * and is refused as a whole.  A member named twice counts once, the last
 * (json_loads keeps the last).
 */
#include "runresult.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

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

/* A measured number, or null; NaN and infinities as strings; a negative
 * zero as -0.0 (a real: a reader keeps "-0" as the integer 0). */
static void
runresult_put_num(struct buf *b, bool has, double v)
{
	if (!has)
		buf_addstr(b, "null");
	else if (v == 0 && signbit(v))
		buf_addstr(b, "-0.0");
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
	if (g->has_changes && g->changes >= 0)
		buf_printf(b, ", \"changes\": %" PRId64, g->changes);
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
		if (c->shard > 0)
			buf_printf(out, ", \"shard\": %d", c->shard);
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

/* Refuse the text: what is wrong, and in which member when known. */
static int
rr_fail(struct err *err, const char *key, const char *what)
{
	if (key == NULL)
		return err_set(err, EXIT_BAD_INPUT, "a malformed run result:"
			       " %s", what);
	return err_set(err, EXIT_BAD_INPUT, "a malformed run result: %s: %s",
		       key, what);
}

/* The bounds of runresult.h over the whole tree, unknown members
 * included: containers nested at most RUNRESULT_MAX_DEPTH deep (v at
 * depth), every string and key at most RUNRESULT_STR_MAX bytes. */
static int
rr_bounded(const json_t *v, int depth, struct err *err)
{
	const char *key;
	json_t *el;
	size_t i;

	if (json_is_string(v) && json_string_length(v) > RUNRESULT_STR_MAX)
		return rr_fail(err, NULL, "a string too long");
	if (!json_is_object(v) && !json_is_array(v))
		return 0;
	if (depth > RUNRESULT_MAX_DEPTH)
		return rr_fail(err, NULL, "nested too deep");
	if (json_is_array(v)) {
		json_array_foreach(v, i, el) {
			if (rr_bounded(el, depth + 1, err) < 0)
				return -1;
		}
		return 0;
	}
	json_object_foreach((json_t *)v, key, el) {
		if (strlen(key) > RUNRESULT_STR_MAX)
			return rr_fail(err, NULL, "a string too long");
		if (rr_bounded(el, depth + 1, err) < 0)
			return -1;
	}
	return 0;
}

/* The member key of o, true or false, into *v (untouched when absent). */
static int
rr_bool(const json_t *o, const char *key, bool *v, struct err *err)
{
	const json_t *j = json_object_get(o, key);

	if (j == NULL)
		return 0;
	if (!json_is_boolean(j))
		return rr_fail(err, key, "true or false expected");
	*v = json_is_true(j);
	return 0;
}

/* The member key of o, an integer, into *v (untouched when absent). */
static int
rr_int(const json_t *o, const char *key, int64_t *v, struct err *err)
{
	const json_t *j = json_object_get(o, key);

	if (j == NULL)
		return 0;
	if (!json_is_integer(j))
		return rr_fail(err, key, "an integer expected");
	*v = json_integer_value(j);
	return 0;
}

/* The member key of o, an integer or null, into *has, *v. */
static int
rr_opt_int(const json_t *o, const char *key, bool *has, int64_t *v,
	   struct err *err)
{
	const json_t *j = json_object_get(o, key);

	if (j == NULL || json_is_null(j))
		return 0;
	*has = true;
	return rr_int(o, key, v, err);
}

/* The member key of o, a number, null, or "nan" "inf" "-inf", into
 * *has, *v (untouched when absent). */
static int
rr_opt_num(const json_t *o, const char *key, bool *has, double *v,
	   struct err *err)
{
	const json_t *j = json_object_get(o, key);
	const char *s;

	if (j == NULL || json_is_null(j))
		return 0;
	if (json_is_number(j)) {
		*v = json_number_value(j);
	} else if (json_is_string(j)) {
		s = json_string_value(j);
		if (strcmp(s, "nan") == 0)
			*v = NAN;
		else if (strcmp(s, "inf") == 0)
			*v = INFINITY;
		else if (strcmp(s, "-inf") == 0)
			*v = -INFINITY;
		else
			return rr_fail(err, key, "a number expected");
	} else {
		return rr_fail(err, key, "a number expected");
	}
	*has = true;
	return 0;
}

/* The member key of o, a string or null, into *out (allocated; NULL for
 * null, untouched when absent). */
static int
rr_opt_str(const json_t *o, const char *key, char **out, struct err *err)
{
	const json_t *j = json_object_get(o, key);

	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_string(j))
		return rr_fail(err, key, "a string expected");
	*out = xstrdup(json_string_value(j));
	return 0;
}

/* The member key of o, an array of at most max elements, into *arr
 * (NULL when absent); *n its length. */
static int
rr_array(const json_t *o, const char *key, size_t max, const json_t **arr,
	 size_t *n, struct err *err)
{
	const json_t *j = json_object_get(o, key);
	char what[48];

	*arr = NULL;
	*n = 0;
	if (j == NULL)
		return 0;
	if (!json_is_array(j))
		return rr_fail(err, key, "an array expected");
	if (json_array_size(j) > max) {
		snprintf(what, sizeof what, "too many %s", key);
		return rr_fail(err, key, what);
	}
	*arr = j;
	*n = json_array_size(j);
	return 0;
}

/* The reconcile and trend figures of a check (exec.h). */
static int
rr_check_figures(const json_t *o, struct runresult_check *c, struct err *err)
{
	bool has;

	if (rr_bool(o, "recon", &c->recon, err) < 0 ||
	    rr_bool(o, "trend", &c->trend, err) < 0 ||
	    rr_int(o, "history", &c->history, err) < 0 ||
	    rr_opt_num(o, "mean", &has, &c->mean, err) < 0 ||
	    rr_opt_num(o, "sd", &has, &c->sd, err) < 0 ||
	    rr_opt_num(o, "sigma", &c->has_sigma, &c->sigma, err) < 0 ||
	    rr_opt_num(o, "source", &c->has_source, &c->source, err) < 0 ||
	    rr_opt_num(o, "target", &c->has_target, &c->target, err) < 0 ||
	    rr_opt_num(o, "difference", &has, &c->diff, err) < 0)
		return -1;
	return 0;
}

/* A check: name required; detail "" when absent. */
static int
rr_check(const json_t *o, struct runresult_check *c, struct err *err)
{
	int64_t part = 0, shard = 0;

	if (!json_is_object(o))
		return rr_fail(err, "checks", "an object expected");
	if (rr_opt_str(o, "name", &c->name, err) < 0 ||
	    rr_opt_str(o, "detail", &c->detail, err) < 0 ||
	    rr_bool(o, "passed", &c->passed, err) < 0 ||
	    rr_bool(o, "warn", &c->warn, err) < 0 ||
	    rr_check_figures(o, c, err) < 0 ||
	    rr_int(o, "part", &part, err) < 0 ||
	    rr_int(o, "shard", &shard, err) < 0)
		return -1;
	if (part < 0 || part >= RUNRESULT_MAX_PARTS)
		return rr_fail(err, "part", "a check's part out of range");
	if (shard < 0 || shard > 4096)
		return rr_fail(err, "shard", "a check's shard out of range");
	c->part = (size_t)part;
	c->shard = (int)shard;
	if (c->name == NULL)
		return rr_fail(err, "checks", "a check without a name");
	if (c->detail == NULL)
		c->detail = xstrdup("");
	return 0;
}

/* A metric of a guard. */
static int
rr_metric(const json_t *o, struct runresult_metric *m, struct err *err)
{
	if (!json_is_object(o))
		return rr_fail(err, "metrics", "an object expected");
	if (rr_opt_num(o, "before", &m->has_before, &m->before, err) < 0 ||
	    rr_opt_num(o, "after", &m->has_after, &m->after, err) < 0 ||
	    rr_opt_num(o, "change_pct", &m->has_change, &m->change_pct,
			err) < 0)
		return -1;
	return 0;
}

/* The member key of o, a checksum (a string of at most
 * RUNRESULT_SUM_MAX - 1 bytes), into out (untouched when absent). */
static int
rr_sum(const json_t *o, const char *key, char out[RUNRESULT_SUM_MAX],
       struct err *err)
{
	const json_t *j = json_object_get(o, key);

	if (j == NULL)
		return 0;
	if (!json_is_string(j))
		return rr_fail(err, key, "a string expected");
	if (json_string_length(j) >= RUNRESULT_SUM_MAX)
		return rr_fail(err, key, "checksum too long");
	memcpy(out, json_string_value(j), json_string_length(j) + 1);
	return 0;
}

/* The guard of one partition. */
static int
rr_guard(const json_t *o, struct runresult_guard *g, struct err *err)
{
	const json_t *ms;

	if (!json_is_object(o))
		return rr_fail(err, "guards", "an object expected");
	if (rr_opt_int(o, "rows_before", &g->has_rows_before, &g->rows_before,
		       err) < 0 ||
	    rr_opt_int(o, "rows_after", &g->has_rows_after, &g->rows_after,
		       err) < 0 ||
	    rr_sum(o, "sum_before", g->sum_before, err) < 0 ||
	    rr_sum(o, "sum_after", g->sum_after, err) < 0 ||
	    rr_opt_int(o, "changes", &g->has_changes, &g->changes, err) < 0 ||
	    rr_array(o, "metrics", RUNRESULT_MAX_METRICS, &ms, &g->nmetrics,
		     err) < 0)
		return -1;
	/* a count of rows: a negative one is no count (a skip would be
	 * decided by it: cutoff_input_of) */
	if (g->has_changes && g->changes < 0)
		return rr_fail(err, "changes", "a count of rows (0 or more)"
			       " expected");
	if (g->nmetrics > 0)
		g->metrics = xcalloc(g->nmetrics, sizeof *g->metrics);
	for (size_t k = 0; k < g->nmetrics; k++)
		if (rr_metric(json_array_get(ms, k), &g->metrics[k], err) < 0)
			return -1;
	return 0;
}

/* The checks and the guards of the result. */
static int
rr_lists(const json_t *o, struct runresult *r, struct err *err)
{
	const json_t *cs, *gs;

	if (rr_array(o, "checks", RUNRESULT_MAX_CHECKS, &cs, &r->nchecks,
		     err) < 0)
		return -1;
	if (r->nchecks > 0)
		r->checks = xcalloc(r->nchecks, sizeof *r->checks);
	for (size_t i = 0; i < r->nchecks; i++)
		if (rr_check(json_array_get(cs, i), &r->checks[i], err) < 0)
			return -1;
	if (json_is_null(json_object_get(o, "guards")))
		return 0;
	if (rr_array(o, "guards", RUNRESULT_MAX_PARTS, &gs, &r->nguards,
		     err) < 0)
		return -1;
	if (gs != NULL)
		r->guards = xcalloc(r->nguards ? r->nguards : 1,
				    sizeof *r->guards);
	for (size_t i = 0; i < r->nguards; i++)
		if (rr_guard(json_array_get(gs, i), &r->guards[i], err) < 0)
			return -1;
	return 0;
}

/* The result's object. */
static int
rr_result(const json_t *o, struct runresult *r, struct err *err)
{
	const json_t *rows = json_object_get(o, "rows_changed");

	if (rr_bool(o, "timed_out", &r->timed_out, err) < 0 ||
	    rr_bool(o, "not_started", &r->not_started, err) < 0 ||
	    rr_bool(o, "cancelled", &r->cancelled, err) < 0 ||
	    rr_bool(o, "committed_before", &r->committed_before, err) < 0)
		return -1;
	if (rows != NULL && !json_is_null(rows) &&
	    rr_int(o, "rows_changed", &r->rows_changed, err) < 0)
		return -1;
	if (r->rows_changed < 0)
		r->rows_changed = -1;
	return rr_lists(o, r, err);
}

/* The length of s before the first needle (all of s without one). */
static size_t
rr_before(const char *s, const char *needle)
{
	const char *at = strstr(s, needle);

	return at != NULL ? (size_t)(at - s) : strlen(s);
}

/* A text that starts with '{': one JSON object, read by jansson. */
static int
runresult_parse_json(const char *text, struct runresult *r, struct err *err)
{
	json_error_t je;
	json_t *root;
	int rc;

	if ((root = json_loads(text, 0, &je)) == NULL) {
		switch (json_error_code(&je)) {
		case json_error_out_of_memory:
			xalloc_exhausted("jansson");
		case json_error_stack_overflow:
			return rr_fail(err, NULL, "nested too deep");
		default:
			/* jansson's words without the text "near" the error,
			 * which may hold any byte, a newline too */
			return err_set(err, EXIT_BAD_INPUT, "a malformed run"
				       " result: %.*s at byte %d",
				       (int)rr_before(je.text, " near "),
				       je.text, je.position);
		}
	}
	rc = rr_bounded(root, 1, err);
	if (rc == 0)
		rc = rr_result(root, r, err);
	json_decref(root);
	return rc;
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
	size_t lead;
	int rc;

	memset(r, 0, sizeof *r);
	r->rows_changed = -1;
	if (text == NULL || text[lead = strspn(text, " \t\n\r")] == '\0')
		return 0;
	if (text[lead] != '{')
		rc = runresult_parse_line(text, r, err);
	else
		rc = runresult_parse_json(text, r, err);
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
