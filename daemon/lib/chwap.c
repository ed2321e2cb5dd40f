/*
 * chwap.c - statements of write-audit-publish over several partitions
 * (chwap.h).
 */
#include "chwap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "chsql.h"
#include "xalloc.h"

/* The literals of keys[0..n), each wrapped in toString() when as_string. */
static int
chwap_literals(const char *const *keys, size_t n, bool as_string,
	       char (*lit)[CHSQL_LITERAL_MAX + 12], struct err *err)
{
	char l[CHSQL_LITERAL_MAX];

	for (size_t i = 0; i < n; i++) {
		if (chsql_literal(keys[i], l, err) == -1)
			return -1;
		snprintf(lit[i], CHSQL_LITERAL_MAX + 12, as_string ?
			 "toString(%s)" : "%s", l);
	}
	return 0;
}

/* multiIf(E = L1, 1, E = L2, 2, ..., 0): which part a row is. */
static void
chwap_which(struct buf *b, const char *e, char (*lit)[CHSQL_LITERAL_MAX + 12],
	    size_t n)
{
	buf_addstr(b, "multiIf(");
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s = %s, %zu, ", e, lit[i], i + 1);
	buf_addstr(b, "0)");
}

/* "E = L1 OR E = L2 ..." */
static void
chwap_any(struct buf *b, const char *e, char (*lit)[CHSQL_LITERAL_MAX + 12],
	  size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s%s = %s", i ? " OR " : "", e, lit[i]);
}

/* The figures: ", '\t', toString(count()) [, sum] [, metrics]" */
static void
chwap_figures(struct buf *b, const struct chwap_spec *s)
{
	buf_addstr(b, ", '\\t', toString(count())");
	if (s->digest)
		buf_addstr(b, ", '\\t', toString(sum(cityHash64(*)))");
	for (size_t k = 0; k < s->nmetrics; k++)
		buf_printf(b, ", '\\t', ifNull(toString((%s)), '')",
			   s->metrics[k]);
}

/* The state: the stage's existence, its parts and marks. */
static void
chwap_state(struct buf *b, const struct chwap_spec *s,
	    char (*str)[CHSQL_LITERAL_MAX + 12], size_t n)
{
	/* the names are plain (chsql_ident_ok) */
	buf_printf(b, "SELECT 'e' AS v FROM system.columns WHERE database ="
		   " currentDatabase() AND table = '%s' AND name = '%s' UNION"
		   " ALL ", s->stage, s->column);
	buf_addstr(b, "SELECT concat('s\\t', toString(");
	chwap_which(b, "partition", str, n);
	buf_printf(b, ")) AS v FROM system.parts WHERE database ="
		   " currentDatabase() AND table = '%s' AND active AND (",
		   s->stage);
	chwap_any(b, "partition", str, n);
	buf_addstr(b, ") UNION ALL SELECT concat('m\\t', toString(");
	chwap_which(b, "partition", str, n);
	buf_printf(b, "), '\\t', toString(request)) AS v FROM `%s` WHERE ",
		   s->mark);
	chwap_any(b, "partition", str, n);
	buf_addstr(b, " UNION ALL ");
}

int
chwap_sql(const struct chwap_spec *s, const char *const *keys, size_t n,
	  char **out, struct err *err)
{
	char (*lit)[CHSQL_LITERAL_MAX + 12] = xcalloc(n ? n : 1, sizeof *lit);
	char (*str)[CHSQL_LITERAL_MAX + 12] = xcalloc(n ? n : 1, sizeof *str);
	char col[CHSQL_IDENT_MAX + 2];
	struct buf b;

	*out = NULL;
	if (chwap_literals(keys, n, false, lit, err) == -1 ||
	    chwap_literals(keys, n, true, str, err) == -1) {
		free(lit);
		free(str);
		return -1;
	}
	snprintf(col, sizeof col, "`%s`", s->column);
	buf_init(&b);
	if (s->stage != NULL)
		chwap_state(&b, s, str, n);
	buf_addstr(&b, "SELECT concat('f\\t', toString(");
	chwap_which(&b, col, lit, n);
	buf_addstr(&b, " AS _backfilld_part)");
	chwap_figures(&b, s);
	buf_printf(&b, ") AS v FROM `%s` WHERE ", s->table);
	chwap_any(&b, col, lit, n);
	buf_addstr(&b, " GROUP BY _backfilld_part UNION ALL SELECT concat('f\\t0'");
	chwap_figures(&b, s);
	/* the figures of no row: no row read (18.16 scans all of a table
	 * for WHERE 0; the key's condition prunes it to one partition) */
	buf_printf(&b, ") AS v FROM `%s` WHERE %s = %s AND 0", s->table, col,
		   n > 0 ? lit[0] : "NULL");
	buf_add(&b, "", 1);
	free(lit);
	free(str);
	*out = buf_steal(&b);
	return 0;
}

/* The tab-separated fields of v into f (at most max), their count. */
static size_t
chwap_fields(char *v, char **f, size_t max)
{
	size_t n = 0;

	while (n < max) {
		f[n++] = v;
		if ((v = strchr(v, '\t')) == NULL)
			break;
		*v++ = '\0';
	}
	return v == NULL ? n : max + 1;
}

/* Part p's figures from fields f (ROWS [SUM] METRIC...). */
static int
chwap_set_figures(const struct chwap_spec *s, struct chwap_part *p, char **f)
{
	char *end;

	p->rows = strtoll(f[0], &end, 10);
	if (end == f[0] || *end != '\0')
		return -1;
	if (s->digest)
		snprintf(p->sum, sizeof p->sum, "%s", f[1]);
	for (size_t k = 0; k < s->nmetrics; k++) {
		free(p->metric[k]);
		p->metric[k] = xstrdup(f[(s->digest ? 2 : 1) + k]);
	}
	return 0;
}

/* One value of the answer into r; -1 when it is none of the forms. */
static int
chwap_value(const struct chwap_spec *s, const char *value,
	    struct chwap_result *r, bool *empty_seen, struct chwap_part *empty)
{
	size_t want = 3 + (s->digest ? 1 : 0) + s->nmetrics, nf, k;
	char *v = xstrdup(value), *f[64], *end;
	int rc = -1;

	nf = chwap_fields(v, f, want < 64 ? want : 64);
	k = nf >= 2 ? (size_t)strtoul(f[1], &end, 10) : 0;
	if (nf >= 2 && (end == f[1] || *end != '\0' || k > r->n))
		goto out;
	if (strcmp(f[0], "e") == 0 && nf == 1) {
		r->stage_exists = true;
		rc = 0;
	} else if (strcmp(f[0], "s") == 0 && nf == 2 && k > 0) {
		r->parts[k - 1].staged = true;
		rc = 0;
	} else if (strcmp(f[0], "m") == 0 && nf == 3 && k > 0) {
		struct chwap_part *p = &r->parts[k - 1];

		if (p->nmarks < CHWAP_MARKS_MAX) {
			p->marks[p->nmarks++] = strtoll(f[2], &end, 10);
			rc = *end == '\0' && end != f[2] ? 0 : -1;
		}
	} else if (strcmp(f[0], "f") == 0 && nf == want) {
		rc = chwap_set_figures(s, k > 0 ? &r->parts[k - 1] : empty,
				       f + 2);
		if (k == 0)
			*empty_seen = true;
		else
			r->parts[k - 1].seen = true;
	}
out:
	free(v);
	return rc;
}

static void
chwap_part_free(struct chwap_part *p, size_t nmetrics)
{
	for (size_t k = 0; k < nmetrics && p->metric != NULL; k++)
		free(p->metric[k]);
	free(p->metric);
}

int
chwap_parse(const struct chwap_spec *s, char *const *values, size_t nvalues,
	    size_t n, struct chwap_result *r, struct err *err)
{
	struct chwap_part empty = { 0 };
	bool empty_seen = false;
	int rc = 0;

	memset(r, 0, sizeof *r);
	r->n = n;
	r->nmetrics = s->nmetrics;
	r->parts = xcalloc(n ? n : 1, sizeof *r->parts);
	empty.metric = xcalloc(s->nmetrics + 1, sizeof *empty.metric);
	for (size_t i = 0; i < n; i++)
		r->parts[i].metric = xcalloc(s->nmetrics + 1,
					     sizeof *r->parts[i].metric);
	for (size_t i = 0; i < nvalues && rc == 0; i++)
		if (chwap_value(s, values[i], r, &empty_seen, &empty) == -1)
			rc = err_set(err, EXIT_WORK_FAILED, "unexpected answer"
				     " %.80s", values[i]);
	if (rc == 0 && !empty_seen)
		rc = err_set(err, EXIT_WORK_FAILED, "no figures of an empty"
			     " partition in the answer");
	/* a part no row equals: the figures of no row */
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct chwap_part *p = &r->parts[i];

		if (p->seen)
			continue;
		p->rows = empty.rows;
		snprintf(p->sum, sizeof p->sum, "%s", empty.sum);
		for (size_t k = 0; k < s->nmetrics; k++) {
			free(p->metric[k]);
			p->metric[k] = xstrdup(empty.metric[k] ?
					       empty.metric[k] : "");
		}
	}
	chwap_part_free(&empty, s->nmetrics);
	if (rc == -1)
		chwap_result_free(r);
	return rc;
}

void
chwap_result_free(struct chwap_result *r)
{
	for (size_t i = 0; i < r->n && r->parts != NULL; i++)
		chwap_part_free(&r->parts[i], r->nmetrics);
	free(r->parts);
	r->parts = NULL;
	r->n = 0;
}

int
chwap_drop_sql(const char *table, bool as_string, const char *const *keys,
	       size_t n, char **out, struct err *err)
{
	char (*lit)[CHSQL_LITERAL_MAX + 12] = xcalloc(n ? n : 1, sizeof *lit);
	struct buf b;

	*out = NULL;
	if (chwap_literals(keys, n, as_string, lit, err) == -1) {
		free(lit);
		return -1;
	}
	buf_init(&b);
	buf_printf(&b, "ALTER TABLE `%s`", table);
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s DROP PARTITION %s", i ? "," : "", lit[i]);
	buf_add(&b, "", 1);
	free(lit);
	*out = buf_steal(&b);
	return 0;
}

int
chwap_mark_sql(const char *mark, const char *const *keys,
	       const int64_t *requests, size_t n, int64_t run, char **out,
	       struct err *err)
{
	char (*lit)[CHSQL_LITERAL_MAX + 12] = xcalloc(n ? n : 1, sizeof *lit);
	struct buf b;

	*out = NULL;
	if (chwap_literals(keys, n, true, lit, err) == -1) {
		free(lit);
		return -1;
	}
	buf_init(&b);
	buf_printf(&b, "INSERT INTO `%s`", mark);
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s SELECT %s, %lld, %lld", i ? " UNION ALL" : "",
			   lit[i], (long long)requests[i], (long long)run);
	buf_add(&b, "", 1);
	free(lit);
	*out = buf_steal(&b);
	return 0;
}
