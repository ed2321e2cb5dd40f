/*
 * pgsql.c - the PostgreSQL statement splitter and parameter translator
 * (pgsql.h).
 *
 * One pass over the tokens of sqlscan.c (the lexer the wall-clock guard
 * uses too, in its PostgreSQL dialect): a quoted thing (string, E-string,
 * quoted identifier, dollar quote, comment) is one token, copied whole, so
 * what it holds can never split a statement or name a parameter; every
 * token is copied as it is except `;` at parenthesis depth 0 (ends the
 * statement) and `:name` (becomes $n).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgsql.h"
#include "sqlscan.h"
#include "xalloc.h"

/* The statement being built. */
struct pgsql_cur {
	struct pgsql_buf text;
	char **names;
	size_t nnames;
	bool started; /* a token other than blanks and comments seen */
	int line;
	int depth;    /* parentheses */
};

void
pgsql_buf_add(struct pgsql_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		while (b->len + n + 1 > b->cap)
			b->cap = b->cap == 0 ? 256 : b->cap * 2;
		b->p = xreallocarray(b->p, b->cap, 1);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* True for a byte PostgreSQL reads as part of a word or number before
 * a `$` (identifiers continue with letters, digits, _, $ and bytes >=
 * 0x80). */
static bool
pgsql_word_byte(char c)
{
	unsigned char u = (unsigned char)c;

	return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') ||
	    (u >= '0' && u <= '9') || u == '_' || u == '$' || u >= 0x80;
}

/* $n (from 1) of parameter `name` (n bytes) in cur, adding it if new. */
static size_t
pgsql_name_index(struct pgsql_cur *cur, const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < cur->nnames; i++)
		if (strlen(cur->names[i]) == n &&
		    memcmp(cur->names[i], name, n) == 0)
			return i + 1;
	cur->names = xreallocarray(cur->names, cur->nnames + 1,
	    sizeof *cur->names);
	cur->names[cur->nnames] = xstrndup(name, n);
	return ++cur->nnames;
}

/* Forget the statement being built. */
static void
pgsql_cur_free(struct pgsql_cur *cur)
{
	size_t i;

	free(cur->text.p);
	for (i = 0; i < cur->nnames; i++)
		free(cur->names[i]);
	free(cur->names);
	memset(cur, 0, sizeof *cur);
}

/* Move a non-empty statement into the script; start the next one. */
static void
pgsql_cur_end(struct pgsql_cur *cur, struct pgsql_script *out)
{
	struct pgsql_stmt *st;
	size_t len;

	if (!cur->started) {
		pgsql_cur_free(cur);
		return;
	}
	len = cur->text.len;
	while (len > 0 && (cur->text.p[len - 1] == ' ' ||
	    cur->text.p[len - 1] == '\t' || cur->text.p[len - 1] == '\n' ||
	    cur->text.p[len - 1] == '\r'))
		len--;
	cur->text.p[len] = '\0';
	out->stmts = xreallocarray(out->stmts, out->n + 1,
	    sizeof *out->stmts);
	st = &out->stmts[out->n++];
	st->sql = cur->text.p;
	st->names = cur->names;
	st->nnames = cur->nnames;
	st->line = cur->line;
	memset(cur, 0, sizeof *cur);
}

/* The error of a token left open at the end of the text (at p). */
static int
pgsql_unterminated(const char *p, const struct sqlscan_tok *t,
    struct err *err)
{
	size_t n;

	if (t->open == SQLSCAN_COMMENT)
		return err_set(err, EXIT_BAD_INPUT, "unterminated "
		    "/* comment starting at line %d", t->line);
	if (t->open == SQLSCAN_DOLLAR) {
		n = 1 + strcspn(p + 1, "$") + 1;
		return err_set(err, EXIT_BAD_INPUT,
		    "unterminated dollar-quoted string %.*s "
		    "starting at line %d", (int)(n > 64 ? 64 : n),
		    p, t->line);
	}
	return err_set(err, EXIT_BAD_INPUT, "unterminated "
	    "%s starting at line %d", t->open ==
	    SQLSCAN_QUOTED ? "quoted identifier" :
	    "quoted string", t->line);
}

/* Is name[0..n) one of the two UTC bounds, bound as a timestamptz? */
bool
pgsql_utc_bound(const char *name, size_t n)
{
	return (n == 19 && memcmp(name, "partition_start_utc", 19) == 0) ||
	    (n == 17 && memcmp(name, "partition_end_utc", 17) == 0);
}

/* A parameter token (at p): :name becomes $N in the statement; a
 * positional $N is refused. */
static int
pgsql_param(struct pgsql_cur *cur, const char *p,
    const struct sqlscan_tok *t, struct err *err)
{
	size_t n, k;
	char num[64];

	if (p[0] == '$') {
		n = t->len - 1;
		return err_set(err, EXIT_BAD_INPUT, "positional parameter "
		    "$%.*s at line %d: name the value instead "
		    "(:partition, :partition_start, :partition_end)",
		    (int)(n > 9 ? 9 : n), p + 1, t->line);
	}
	/* "x:name" must not become "x$1": PostgreSQL reads
	 * that as one identifier, and the parameter is lost */
	if (cur->text.len > 0 &&
	    pgsql_word_byte(cur->text.p[cur->text.len - 1]))
		pgsql_buf_add(&cur->text, " ", 1);
	n = t->len - 1;
	k = pgsql_name_index(cur, p + 1, n);
	/* a UTC bound (:partition_start_utc, :partition_end_utc) is a
	 * timestamptz whatever the session's TimeZone: its text is UTC */
	if (pgsql_utc_bound(p + 1, n))
		snprintf(num, sizeof num, "($%zu::timestamp AT TIME ZONE 'UTC')",
		    k);
	else
		snprintf(num, sizeof num, "$%zu", k);
	pgsql_buf_add(&cur->text, num, strlen(num));
	return 0;
}

/* Split and translate; see pgsql.h. */
int
pgsql_parse(const char *sql, struct pgsql_script *out, struct err *err)
{
	struct pgsql_cur cur;
	struct sqlscan sc;
	struct sqlscan_tok t;
	const char *p;
	size_t k;
	int rc = 0;

	out->stmts = NULL;
	out->n = 0;
	memset(&cur, 0, sizeof cur);
	sqlscan_init(&sc, sql, SQLSCAN_PG);
	while (rc == 0 && sqlscan_next(&sc, &t) != SQLSCAN_END) {
		p = sql + t.off;
		switch (t.kind) {
		case SQLSCAN_SPACE:
		case SQLSCAN_COMMENT:
			pgsql_buf_add(&cur.text, p, t.len);
			continue;
		case SQLSCAN_UNTERMINATED:
			rc = pgsql_unterminated(p, &t, err);
			continue;
		default:
			break;
		}
		if (sqlscan_is_punct(&sc, &t, ';') && cur.depth == 0) {
			pgsql_cur_end(&cur, out);
			continue;
		}
		if (!cur.started) {
			cur.started = true;
			cur.line = t.line;
		}
		if (t.kind == SQLSCAN_PARAM) {
			rc = pgsql_param(&cur, p, &t, err);
			continue;
		}
		if (sqlscan_is_punct(&sc, &t, '('))
			cur.depth++;
		else if (sqlscan_is_punct(&sc, &t, ')') && cur.depth > 0)
			cur.depth--;
		pgsql_buf_add(&cur.text, p, t.len);
	}
	if (rc == -1) {
		k = out->n + 1;
		pgsql_cur_free(&cur);
		pgsql_script_free(out);
		out->n = k;
		return -1;
	}
	pgsql_cur_end(&cur, out);
	pgsql_cur_free(&cur);
	return 0;
}

/* Free a script's statements. */
void
pgsql_script_free(struct pgsql_script *s)
{
	size_t i, k;

	if (s == NULL)
		return;
	for (i = 0; s->stmts != NULL && i < s->n; i++) {
		free(s->stmts[i].sql);
		for (k = 0; k < s->stmts[i].nnames; k++)
			free(s->stmts[i].names[k]);
		free(s->stmts[i].names);
	}
	free(s->stmts);
	s->stmts = NULL;
	s->n = 0;
}

/* Look up each of the statement's names in params. */
int
pgsql_values(const struct pgsql_stmt *st, const struct wh_param *params,
	     size_t nparams, const char **values, struct err *err)
{
	char known[256];
	size_t i, k, off;
	int w;

	for (k = 0; k < st->nnames; k++) {
		for (i = 0; i < nparams; i++)
			if (strcmp(st->names[k], params[i].name) == 0)
				break;
		if (i < nparams) {
			values[k] = params[i].value;
			continue;
		}
		off = 0;
		known[0] = '\0';
		for (i = 0; i < nparams && off < sizeof known; i++) {
			w = snprintf(known + off, sizeof known - off, "%s:%s",
			    i > 0 ? ", " : "", params[i].name);
			if (w < 0)
				break;
			off += (size_t)w;
		}
		return err_set(err, EXIT_WORK_FAILED, "parameter :%s has no "
		    "value (known: %s)", st->names[k],
		    nparams > 0 ? known : "none");
	}
	return 0;
}

void
pgsql_buf_join(struct pgsql_buf *b, const char *const *parts, size_t n,
	       char sep)
{
	pgsql_buf_add(b, "", 0);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			pgsql_buf_add(b, &sep, 1);
		pgsql_buf_add(b, parts[i], strlen(parts[i]));
	}
}

/* ---- array literals ------------------------------------------------- */

/* Open the literal or separate the next element. */
static void
pgsql_array_next(struct pgsql_array *a)
{
	pgsql_buf_add(&a->b, a->n++ == 0 ? "{" : ",", 1);
}

void
pgsql_array_text(struct pgsql_array *a, const char *s)
{
	pgsql_array_next(a);
	if (s == NULL) {
		pgsql_buf_add(&a->b, "NULL", 4);
		return;
	}
	pgsql_buf_add(&a->b, "\"", 1);
	while (*s != '\0') {
		size_t n = strcspn(s, "\"\\");

		pgsql_buf_add(&a->b, s, n);
		s += n;
		if (*s != '\0') {
			pgsql_buf_add(&a->b, "\\", 1);
			pgsql_buf_add(&a->b, s++, 1);
		}
	}
	pgsql_buf_add(&a->b, "\"", 1);
}

void
pgsql_array_int(struct pgsql_array *a, int64_t v)
{
	char num[32];

	pgsql_array_next(a);
	snprintf(num, sizeof num, "%" PRId64, v);
	pgsql_buf_add(&a->b, num, strlen(num));
}

void
pgsql_array_bool(struct pgsql_array *a, bool v)
{
	pgsql_array_next(a);
	pgsql_buf_add(&a->b, v ? "t" : "f", 1);
}

const char *
pgsql_array_end(struct pgsql_array *a)
{
	if (a->n == 0)
		pgsql_buf_add(&a->b, "{", 1);
	pgsql_buf_add(&a->b, "}", 1);
	return a->b.p;
}

void
pgsql_array_free(struct pgsql_array *a)
{
	free(a->b.p);
	memset(a, 0, sizeof *a);
}

/* Append " key=value" (value[0..n)) to out, cut to size. */
static void
pgsql_name_add(char *out, size_t size, const char *key, const char *v,
	       size_t n)
{
	size_t len = strlen(out);

	if (n == 0 || len + 1 >= size)
		return;
	snprintf(out + len, size - len, "%s%s=%.*s", len ? " " : "", key,
		 (int)n, v);
}

/* A URI's hosts (with their ports, as written) and database:
 * postgresql://[user[:password]@]host[:port][,...][/dbname][?...]. */
static void
pgsql_name_uri(const char *s, char *out, size_t size)
{
	const char *net = strstr(s, "://") + 3, *end;

	end = net + strcspn(net, "/?");
	/* the last '@' of the authority: a password may hold one */
	for (const char *q = net; q < end; q++)
		if (*q == '@')
			net = q + 1;
	pgsql_name_add(out, size, "host", net, (size_t)(end - net));
	if (*end == '/')
		pgsql_name_add(out, size, "dbname", end + 1,
			       strcspn(end + 1, "?"));
}

void
pgsql_conninfo_name(const char *conninfo, char *out, size_t size)
{
	static const char *const keys[] = { "host", "port", "dbname" };
	const char *found[3] = { NULL, NULL, NULL };
	size_t flen[3] = { 0, 0, 0 };
	const char *s = conninfo ? conninfo : "";

	if (size == 0)
		return;
	out[0] = '\0';
	if (strncmp(s, "postgresql://", 13) == 0 ||
	    strncmp(s, "postgres://", 11) == 0) {
		pgsql_name_uri(s, out, size);
		return;
	}
	/* key = value pairs, blanks between; a value may be 'quoted' with
	 * \' and \\ inside (shown as written, quotes left out) */
	while (*s != '\0') {
		const char *k, *v;
		size_t kl, vl;

		while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
			s++;
		if (*s == '\0')
			break;
		k = s;
		while (*s != '\0' && *s != '=' && *s != ' ' && *s != '\t')
			s++;
		kl = (size_t)(s - k);
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s != '=')
			break; /* not a connection string libpq reads */
		s++;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\'') {
			v = ++s;
			while (*s != '\0' && *s != '\'') {
				if (*s == '\\' && s[1] != '\0')
					s++;
				s++;
			}
			vl = (size_t)(s - v);
			if (*s == '\'')
				s++;
		} else {
			v = s;
			while (*s != '\0' && *s != ' ' && *s != '\t' &&
			       *s != '\n' && *s != '\r')
				s++;
			vl = (size_t)(s - v);
		}
		for (size_t i = 0; i < 3; i++)
			if (kl == strlen(keys[i]) &&
			    strncmp(k, keys[i], kl) == 0) {
				found[i] = v;
				flen[i] = vl;
			}
	}
	for (size_t i = 0; i < 3; i++)
		if (found[i] != NULL)
			pgsql_name_add(out, size, keys[i], found[i], flen[i]);
}
