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

/* The texts of keys[0..n) as plain quoted literals, 'YYYY-MM-DD' or
 * 'YYYY-MM-DD HH:00:00' (the server converts them to the column's type;
 * a typed literal per partition, toDate('...'), costs the 18.16 analyser
 * a millisecond each). */
static int
chwap_texts(const char *const *keys, size_t n, char (*txt)[CHSQL_LITERAL_MAX],
	    struct err *err)
{
	for (size_t i = 0; i < n; i++)
		if (chsql_plain(keys[i], txt[i], err) == -1)
			return -1;
	return 0;
}

/* "E IN (T1, T2, ...)" */
static void
chwap_in(struct buf *b, const char *e, char (*txt)[CHSQL_LITERAL_MAX], size_t n)
{
	buf_printf(b, "%s IN (", e);
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s%s", i ? ", " : "", txt[i]);
	buf_addstr(b, ")");
}

/* The figures: ", '\t', toString(count()) [, sum] [, metrics]" */
static void
chwap_figures(struct buf *b, const struct chwap_spec *s)
{
	buf_addstr(b, ", '\\t', toString(count())");
	if (s->digest)
		buf_addstr(b, ", '\\t', toString(sum(" CHSQL_ROW_HASH "))");
	for (size_t k = 0; k < s->nmetrics; k++)
		buf_printf(b, ", '\\t', ifNull(toString((%s)), '')",
			   s->metrics[k]);
}

/* The state: the stage's existence, its parts and marks. */
static void
chwap_state(struct buf *b, const struct chwap_spec *s,
	    char (*txt)[CHSQL_LITERAL_MAX], size_t n)
{
	char part[64] = "partition";

	/* a compound key's "('K',...)": K from its third byte (chparts.h) */
	if (s->compound)
		snprintf(part, sizeof part, "substring(partition, 3, %zu)",
			 strlen(txt[0]) - 2);
	/* the names are plain (chsql_ident_ok) */
	buf_printf(b, "SELECT 'e' AS v FROM system.columns WHERE database ="
		   " currentDatabase() AND table = '%s' AND name = '%s' UNION"
		   " ALL SELECT concat('s\\t', %s) AS v FROM system.parts"
		   " WHERE database = currentDatabase() AND table = '%s' AND"
		   " active AND ", s->stage, s->column, part, s->stage);
	chwap_in(b, part, txt, n);
	buf_printf(b, " UNION ALL SELECT concat('m\\t', partition, '\\t',"
		   " toString(request)) AS v FROM `%s` WHERE ", s->mark);
	chwap_in(b, "partition", txt, n);
	buf_addstr(b, " UNION ALL ");
}

/* The hours of a zone compared with the column as typed literals,
 * toDateTime('UTC hour', 'UTC') (chsql_literal): 18.16 reads a text
 * compared with a DateTime('UTC') in the server's zone, where a partition
 * value (chwap_state, REPLACE PARTITION) is read in the column's. */
static void
chwap_typed(const char *const *keys, size_t n, char (*txt)[CHSQL_LITERAL_MAX])
{
	char utc[CHSQL_LITERAL_MAX];
	struct err e;

	for (size_t i = 0; i < n; i++)
		if (chsql_zoned_hour(keys[i], utc) == 0)
			(void)chsql_literal(keys[i], txt[i], &e);
}

/* The partition's rows: those whose column, through the grain's
 * function, is its key (a DateTime column holding any instant of it); the
 * column compared as it is would never equal a day's key. */
static void
chwap_col(const struct chwap_spec *s, char *col, size_t size)
{
	if (s->part_fn != NULL)
		snprintf(col, size, "%s(`%s`)", s->part_fn, s->column);
	else
		snprintf(col, size, "`%s`", s->column);
}

int
chwap_sql(const struct chwap_spec *s, const char *const *keys, size_t n,
	  char **out, struct err *err)
{
	char (*txt)[CHSQL_LITERAL_MAX] = xcalloc(n ? n : 1, sizeof *txt);
	char col[CHSQL_IDENT_MAX + 48];
	struct buf b;

	*out = NULL;
	if (n == 0 || chwap_texts(keys, n, txt, err) == -1) {
		free(txt);
		return n == 0 ? err_set(err, EXIT_BAD_INPUT, "no partition")
			      : -1;
	}
	chwap_col(s, col, sizeof col);
	buf_init(&b);
	if (s->stage != NULL)
		chwap_state(&b, s, txt, n);
	chwap_typed(keys, n, txt);
	buf_printf(&b, "SELECT concat('f\\t', toString(%s) AS _backfilld_part",
		   col);
	chwap_figures(&b, s);
	buf_printf(&b, ") AS v FROM `%s`%s WHERE ", s->table,
		   s->final ? " FINAL" : "");
	chwap_in(&b, col, txt, n);
	buf_addstr(&b, " GROUP BY _backfilld_part UNION ALL SELECT"
		   " concat('n\\t-'");
	chwap_figures(&b, s);
	/* the figures of no row: no row read (18.16 scans all of a table
	 * for WHERE 0; the key's condition prunes it to one partition) */
	buf_printf(&b, ") AS v FROM `%s`%s WHERE %s = %s AND 0", s->table,
		   s->final ? " FINAL" : "", col, txt[0]);
	if (s->ids_live != NULL) {
		char *ids;

		if (chparts_ids_sql(s->table, s->ids_live, keys, n, &ids,
				    err) == -1) {
			buf_free(&b);
			free(txt);
			return -1;
		}
		buf_printf(&b, " UNION ALL SELECT concat('q\\t', v) AS v FROM"
			   " (%s)", ids);
		free(ids);
	}
	buf_add(&b, "", 1);
	free(txt);
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

/* Which of the n keys the server's text of a value is, by their plain
 * literals txt (chwap_texts, quoted), 1-based; 0 for none. */
static size_t
chwap_which(char (*txt)[CHSQL_LITERAL_MAX], size_t n, const char *text)
{
	size_t len = strlen(text);

	for (size_t i = 0; i < n; i++)
		if (strlen(txt[i]) == len + 2 &&
		    strncmp(text, txt[i] + 1, len) == 0)
			return i + 1;
	return 0;
}

/* One value of the answer into r; -1 when it is none of the forms. */
static int
chwap_value(const struct chwap_spec *s, char (*txt)[CHSQL_LITERAL_MAX],
	    const char *value, struct chwap_result *r, bool *empty_seen,
	    struct chwap_part *empty)
{
	size_t want = 3 + (s->digest ? 1 : 0) + s->nmetrics, nf, k = 0;
	char *v = xstrdup(value), *f[64] = { NULL }, *end;
	int rc = -1;

	/* a "q" row has 4 fields */
	nf = chwap_fields(v, f, want < 4 ? 4 : want < 64 ? want : 64);
	if (nf >= 2 && strcmp(f[0], "n") != 0 &&
	    (k = chwap_which(txt, r->n, f[1])) == 0)
		goto out;
	if (strcmp(f[0], "e") == 0 && nf == 1) {
		r->stage_exists = true;
		rc = 0;
	} else if (strcmp(f[0], "s") == 0 && nf == 2) {
		r->parts[k - 1].staged = true;
		rc = 0;
	} else if (strcmp(f[0], "m") == 0 && nf == 3) {
		struct chwap_part *p = &r->parts[k - 1];

		if (p->nmarks < CHWAP_MARKS_MAX) {
			p->marks[p->nmarks++] = strtoll(f[2], &end, 10);
			rc = *end == '\0' && end != f[2] ? 0 : -1;
		}
	} else if (strcmp(f[0], "f") == 0 && nf == want) {
		rc = chwap_set_figures(s, &r->parts[k - 1], f + 2);
		r->parts[k - 1].seen = true;
	} else if (strcmp(f[0], "q") == 0 && nf == 4 && s->ids_live != NULL &&
		   (f[2][0] == 's' || f[2][0] == 'l') && f[2][1] == '\0') {
		rc = chparts_add(&r->parts[k - 1].ids, f[2][0] == 's', f[3]);
	} else if (strcmp(f[0], "n") == 0 && nf == want) {
		rc = chwap_set_figures(s, empty, f + 2);
		*empty_seen = true;
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
	chparts_free(&p->ids, 1);
}

int
chwap_parse(const struct chwap_spec *s, const char *const *keys,
	    char *const *values, size_t nvalues, size_t n,
	    struct chwap_result *r, struct err *err)
{
	char (*txt)[CHSQL_LITERAL_MAX] = xcalloc(n ? n : 1, sizeof *txt);
	struct chwap_part empty = { 0 };
	bool empty_seen = false;
	int rc = chwap_texts(keys, n, txt, err);

	memset(r, 0, sizeof *r);
	r->n = n;
	r->nmetrics = s->nmetrics;
	r->parts = xcalloc(n ? n : 1, sizeof *r->parts);
	empty.metric = xcalloc(s->nmetrics + 1, sizeof *empty.metric);
	for (size_t i = 0; i < n; i++)
		r->parts[i].metric = xcalloc(s->nmetrics + 1,
					     sizeof *r->parts[i].metric);
	for (size_t i = 0; i < nvalues && rc == 0; i++)
		if (chwap_value(s, txt, values[i], r, &empty_seen,
				&empty) == -1)
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
	free(txt);
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

/* ALTER TABLE `table` VERB PARTITION 'K'[ FROM `from`], ... of keys[0..n). */
static int
chwap_alter_sql(const char *table, const char *verb, const char *from,
		const char *const *keys, size_t n, char **out, struct err *err)
{
	char (*txt)[CHSQL_LITERAL_MAX] = xcalloc(n ? n : 1, sizeof *txt);
	struct buf b;

	*out = NULL;
	if (chwap_texts(keys, n, txt, err) == -1) {
		free(txt);
		return -1;
	}
	buf_init(&b);
	buf_printf(&b, "ALTER TABLE `%s`", table);
	for (size_t i = 0; i < n; i++) {
		buf_printf(&b, "%s %s PARTITION %s", i ? "," : "", verb, txt[i]);
		if (from != NULL)
			buf_printf(&b, " FROM `%s`", from);
	}
	buf_add(&b, "", 1);
	free(txt);
	*out = buf_steal(&b);
	return 0;
}

int
chwap_drop_sql(const char *table, const char *const *keys, size_t n,
	       char **out, struct err *err)
{
	return chwap_alter_sql(table, "DROP", NULL, keys, n, out, err);
}

int
chwap_replace_sql(const char *live, const char *stage,
		  const char *const *keys, size_t n, char **out,
		  struct err *err)
{
	return chwap_alter_sql(live, "REPLACE", stage, keys, n, out, err);
}

int
chwap_mark_sql(const char *mark, const char *const *keys,
	       const int64_t *requests, size_t n, int64_t run, char **out,
	       struct err *err)
{
	char (*txt)[CHSQL_LITERAL_MAX] = xcalloc(n ? n : 1, sizeof *txt);
	struct buf b;

	*out = NULL;
	if (chwap_texts(keys, n, txt, err) == -1) {
		free(txt);
		return -1;
	}
	buf_init(&b);
	buf_printf(&b, "INSERT INTO `%s` VALUES", mark);
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s (%s, %lld, %lld)", i ? "," : "", txt[i],
			   (long long)requests[i], (long long)run);
	buf_add(&b, "", 1);
	free(txt);
	*out = buf_steal(&b);
	return 0;
}

int
chwap_mark_runs_sql(const char *mark, const char *const *keys, size_t n,
		    char **out, struct err *err)
{
	char (*txt)[CHSQL_LITERAL_MAX] = xcalloc(n ? n : 1, sizeof *txt);
	struct buf b;

	*out = NULL;
	if (n == 0 || chwap_texts(keys, n, txt, err) == -1) {
		free(txt);
		return n == 0 ? err_set(err, EXIT_BAD_INPUT, "no partition")
			      : -1;
	}
	buf_init(&b);
	buf_printf(&b, "SELECT DISTINCT toString(run) FROM `%s` WHERE ", mark);
	chwap_in(&b, "partition", txt, n);
	buf_add(&b, "", 1);
	free(txt);
	*out = buf_steal(&b);
	return 0;
}

int
chwap_drop_runs_sql(const char *mark, char *const *runs, size_t n, char **out,
		    struct err *err)
{
	struct buf b;

	*out = NULL;
	buf_init(&b);
	buf_printf(&b, "ALTER TABLE `%s`", mark);
	for (size_t i = 0; i < n; i++) {
		const char *r = runs[i];
		size_t len = strspn(r, "0123456789");

		/* text from the server, bound again: digits only */
		if (len == 0 || len > 18 || r[len] != '\0') {
			buf_free(&b);
			return err_set(err, EXIT_WORK_FAILED, "unexpected run"
				       " %.40s in the marks", r);
		}
		buf_printf(&b, "%s DROP PARTITION %s", i ? "," : "", r);
	}
	buf_add(&b, "", 1);
	*out = buf_steal(&b);
	return 0;
}

char *
chwap_known_sql(const char *stage, const char *mark, const char *column)
{
	/* the names are plain (chsql_ident_ok) */
	return xasprintf("SELECT 'e' AS v FROM system.columns WHERE database ="
			 " currentDatabase() AND table = '%s' AND name = '%s'"
			 " UNION ALL SELECT concat('s\\t', partition) AS v FROM"
			 " system.parts WHERE database = currentDatabase() AND"
			 " table = '%s' AND active UNION ALL SELECT"
			 " concat('m\\t', partition) AS v FROM `%s`", stage,
			 column, stage, mark);
}

/* "SELECT concat('TAGn\t-', FIGURES) AS v FROM `table` WHERE col = lit":
 * an aggregate without GROUP BY answers one row, for no row too. */
static void
chwap_one(struct buf *b, const struct chwap_spec *s, const char *table,
	  char tag, const char *col, const char *lit)
{
	buf_printf(b, "SELECT concat('%cn\\t-'", tag);
	chwap_figures(b, s);
	buf_printf(b, ") AS v FROM `%s`%s WHERE %s = %s", table,
		   s->final ? " FINAL" : "", col, lit);
}

int
chwap_pair_sql(const struct chwap_spec *s, const char *stage,
	       const char *key, char **out, struct err *err)
{
	char txt[1][CHSQL_LITERAL_MAX], col[CHSQL_IDENT_MAX + 48];
	struct buf b;

	*out = NULL;
	if (chwap_texts(&key, 1, txt, err) == -1)
		return -1;
	chwap_typed(&key, 1, txt);
	chwap_col(s, col, sizeof col);
	buf_init(&b);
	chwap_one(&b, s, s->table, 'b', col, txt[0]);
	buf_addstr(&b, " UNION ALL ");
	chwap_one(&b, s, stage, 'a', col, txt[0]);
	buf_add(&b, "", 1);
	*out = buf_steal(&b);
	return 0;
}

char *
chwap_marks_sql(const char *mark)
{
	/* the name is plain (chsql_ident_ok) */
	return xasprintf("SELECT concat(toString(request), '\\t', partition)"
			 " FROM `%s`", mark);
}
