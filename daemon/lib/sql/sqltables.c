/*
 * sqltables.c - the tables an SQL script reads and writes (sqltables.h).
 *
 * One pass over sqlscan's solid tokens with a stack of the parentheses
 * open: a FROM names tables only at the top of a statement or inside a
 * parenthesis that holds a query (its first token SELECT, WITH or VALUES,
 * or it opened where a FROM item was expected), so that EXTRACT(YEAR FROM
 * d) reads nothing.  Lookahead works on a copy of the scanner.
 */
#include "sqltables.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xalloc.h"

#define ST_DEPTH 64 /* parentheses tracked; deeper ones count as calls */

struct st_paren {
	bool query; /* holds a query: its FROM names tables */
	bool item;  /* a FROM item: an alias and a ',' may follow it */
};

struct st_names {
	char **v;
	size_t n;
};

struct st {
	struct sqlscan s;
	struct sqltables *out;
	int stmt;
	int depth;
	struct st_paren par[ST_DEPTH + 1];
	bool first;        /* the token is the first after a '(' */
	bool expect_table; /* the token is a FROM item (after "FROM (") */
	struct sqlscan_tok prev, prev2; /* the solid tokens before it */
	size_t taken;      /* tokens taken by lookahead (st_take) */
	struct st_names ctes;  /* this statement's CTE names */
	struct st_names temps; /* CREATE TEMP TABLE names: the script's own */
	struct st_names made;  /* CREATE TABLE names: later reads its own */
	int cte_depth;     /* depth of the WITH list open, -1: none */
	bool want_using;   /* DELETE or MERGE: USING names a table */
};

/* Words that end a FROM item rather than alias it. */
static const char *const st_clause_words[] = {
	"where", "group", "order", "having", "limit", "offset", "fetch",
	"join", "inner", "left", "right", "full", "cross", "natural", "outer",
	"on", "using", "union", "except", "intersect", "window", "set",
	"final", "sample", "prewhere", "array", "global", "any", "all",
	"asof", "semi", "anti", "paste", "for", "returning", "values",
	"select", "default", "lateral", "format", "settings", "partition",
	"with", "indexed", "not", "tablesample", "local", "into", "from",
	"and", "or", "when", "then", "else", "end", "do", "qualify",
	"straight_join", NULL
};

static void st_item(struct st *st, enum sqltables_use use, bool list);

static bool
st_word(const struct st *st, const struct sqlscan_tok *t, const char *w)
{
	return sqlscan_is_word(&st->s, t, w);
}

static bool
st_word_in(const struct st *st, const struct sqlscan_tok *t,
	   const char *const *words)
{
	for (; *words != NULL; words++)
		if (st_word(st, t, *words))
			return true;
	return false;
}

static bool
st_punct(const struct st *st, const struct sqlscan_tok *t, char c)
{
	return sqlscan_is_punct(&st->s, t, c);
}

/* The next solid token, not consumed. */
static struct sqlscan_tok
st_peek(const struct st *st)
{
	struct sqlscan c = st->s;
	struct sqlscan_tok t;

	sqlscan_next_solid(&c, &t);
	return t;
}

/* Consume the next solid token into *t (it becomes prev). */
static void
st_take(struct st *st, struct sqlscan_tok *t)
{
	sqlscan_next_solid(&st->s, t);
	st->prev2 = st->prev;
	st->prev = *t;
	st->taken++;
}

/* Consume the next token when it is the word w. */
static bool
st_skip_word(struct st *st, const char *w)
{
	struct sqlscan_tok t = st_peek(st);

	if (!st_word(st, &t, w))
		return false;
	st_take(st, &t);
	return true;
}

/* Skip a balanced parenthesis whose '(' is the next token of scanner c. */
static void
st_skip_parens(struct sqlscan *c)
{
	struct sqlscan_tok t;
	int depth = 0;

	while (sqlscan_next_solid(c, &t) != SQLSCAN_END &&
	       t.kind != SQLSCAN_UNTERMINATED) {
		if (sqlscan_is_punct(c, &t, '('))
			depth++;
		else if (sqlscan_is_punct(c, &t, ')') && --depth <= 0)
			return;
	}
}

/* True for a token that can be part of a table's name. */
static bool
st_is_part(const struct st *st, const struct sqlscan_tok *t)
{
	return t->kind == SQLSCAN_QUOTED ||
	    (t->kind == SQLSCAN_WORD && !st_word(st, t, "select") &&
	     !st_word(st, t, "values") && !st_word(st, t, "with"));
}

/* Append name part t to buf, unquoted (or folded when unquoted and the
 * dialect folds). */
static void
st_add_part(const struct st *st, const struct sqlscan_tok *t, char *buf,
	    size_t *o)
{
	const char *p = st->s.sql + t->off;
	size_t i;

	if (t->kind == SQLSCAN_WORD) {
		for (i = 0; i < t->len; i++) {
			char c = p[i];

			if (st->s.dialect != SQLSCAN_CH && c >= 'A' && c <= 'Z')
				c = (char)(c - 'A' + 'a');
			buf[(*o)++] = c;
		}
		return;
	}
	char close = p[0] == '[' ? ']' : p[0];

	for (i = 1; i + 1 < t->len; i++) {
		if (st->s.dialect == SQLSCAN_CH && p[i] == '\\' && i + 2 < t->len)
			i++;
		else if (p[i] == close && i + 2 < t->len && p[i + 1] == close)
			i++;
		buf[(*o)++] = p[i];
	}
}

/* Read a name (part ['.' part]...) whose first part is the next token:
 * its unquoted text (malloc'd), and its bytes in *off and *len. */
static char *
st_name(struct st *st, size_t *off, size_t *len)
{
	struct sqlscan_tok t, n;
	size_t cap, o = 0;
	char *buf;

	st_take(st, &t);
	*off = t.off;
	cap = t.len + 1;
	buf = xmalloc(cap);
	st_add_part(st, &t, buf, &o);
	for (;;) {
		n = st_peek(st);
		if (!st_punct(st, &n, '.'))
			break;
		struct sqlscan c = st->s;
		struct sqlscan_tok dot, part;

		sqlscan_next_solid(&c, &dot);
		sqlscan_next_solid(&c, &part);
		if (part.kind != SQLSCAN_WORD && part.kind != SQLSCAN_QUOTED)
			break;
		st_take(st, &dot);
		st_take(st, &part);
		cap += part.len + 1;
		buf = xreallocarray(buf, cap, 1);
		buf[o++] = '.';
		st_add_part(st, &part, buf, &o);
		t = part;
	}
	buf[o] = '\0';
	*len = t.off + t.len - *off;
	return buf;
}

static bool
st_has(const struct st_names *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], name) == 0)
			return true;
	return false;
}

static void
st_add(struct st_names *l, const char *name)
{
	l->v = xreallocarray(l->v, l->n + 1, sizeof *l->v);
	l->v[l->n++] = xstrdup(name);
}

static void
st_clear(struct st_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Report name (taken over) unless the script's own: a CTE, a temporary
 * table, or (read) a table it created. */
static void
st_report(struct st *st, enum sqltables_use use, char *name, size_t off,
	  size_t len)
{
	struct sqltables *o = st->out;

	if (st_has(&st->ctes, name) || st_has(&st->temps, name) ||
	    (use == SQLTABLES_READ && st_has(&st->made, name))) {
		free(name);
		return;
	}
	o->refs = xreallocarray(o->refs, o->n + 1, sizeof *o->refs);
	o->refs[o->n++] = (struct sqltables_ref){ use, name, off, len,
		st->stmt };
}

/* Open a parenthesis (its '(' just taken); item: a FROM item's. */
static void
st_open(struct st *st, bool item)
{
	st->depth++;
	st->first = true;
	if (st->depth <= ST_DEPTH)
		st->par[st->depth] = (struct st_paren){ false, item };
}

/* After a FROM item: its alias (AS a, or a word that starts no clause)
 * with its column list; true when a ',' follows (taken): another item. */
static bool
st_after_item(struct st *st)
{
	struct sqlscan_tok t = st_peek(st);
	bool alias = false;

	if (st_word(st, &t, "as")) {
		st_take(st, &t);
		t = st_peek(st);
		if (t.kind == SQLSCAN_WORD || t.kind == SQLSCAN_QUOTED) {
			st_take(st, &t);
			alias = true;
		}
	} else if (t.kind == SQLSCAN_QUOTED || (t.kind == SQLSCAN_WORD &&
		   !st_word_in(st, &t, st_clause_words))) {
		st_take(st, &t);
		alias = true;
	}
	t = st_peek(st);
	if (alias && st_punct(st, &t, '(')) {
		st_skip_parens(&st->s);
		st->prev = st->prev2 = (struct sqlscan_tok){ 0 };
		t = st_peek(st);
	}
	if (!st_punct(st, &t, ','))
		return false;
	st_take(st, &t);
	return true;
}

/* A table named where `use` expects one (after FROM, JOIN, INTO, ...):
 * a name (not a table function's), or a parenthesis opened as a FROM
 * item; list: FROM items separated by ',' may follow. */
static void
st_item(struct st *st, enum sqltables_use use, bool list)
{
	struct sqlscan_tok t;

	do {
		while (st_skip_word(st, "only") || st_skip_word(st, "lateral"))
			;
		t = st_peek(st);
		if (st_punct(st, &t, '(')) {
			st_take(st, &t);
			st_open(st, list);
			st->expect_table = true;
			return;
		}
		if (!st_is_part(st, &t))
			return;

		size_t off, len;
		char *name = st_name(st, &off, &len);

		t = st_peek(st);
		if (use == SQLTABLES_READ && st_punct(st, &t, '(')) {
			free(name); /* a table function: FROM numbers(10) */
			return;
		}
		st_report(st, use, name, off, len);
	} while (list && st_after_item(st));
}

/* A CTE's head where the next token is: [RECURSIVE] name [(cols)] AS
 * [NOT] [MATERIALIZED] '('.  Taken up to its '(' when it is one. */
static bool
st_cte(struct st *st)
{
	struct sqlscan c = st->s, k;
	struct sqlscan_tok t;
	size_t off, len;

	sqlscan_next_solid(&c, &t);
	if (sqlscan_is_word(&c, &t, "recursive"))
		sqlscan_next_solid(&c, &t);
	if (!st_is_part(st, &t))
		return false;
	k = c;
	sqlscan_next_solid(&k, &t);
	if (sqlscan_is_punct(&k, &t, '(')) {
		k = c;
		st_skip_parens(&k);
		sqlscan_next_solid(&k, &t);
	}
	if (!sqlscan_is_word(&k, &t, "as"))
		return false;
	sqlscan_next_solid(&k, &t);
	if (sqlscan_is_word(&k, &t, "not"))
		sqlscan_next_solid(&k, &t);
	if (sqlscan_is_word(&k, &t, "materialized"))
		sqlscan_next_solid(&k, &t);
	if (!sqlscan_is_punct(&k, &t, '('))
		return false;
	st_skip_word(st, "recursive");
	char *name = st_name(st, &off, &len);

	st_add(&st->ctes, name);
	free(name);
	st->s = k;
	st->prev = t;
	st->cte_depth = st->depth;
	st_open(st, false);
	return true;
}

/* CREATE [OR REPLACE] [GLOBAL|LOCAL] [TEMP|TEMPORARY|UNLOGGED] TABLE
 * [IF NOT EXISTS] name: a write, or the script's own temporary table. */
static void
st_create(struct st *st)
{
	bool temp = false;
	size_t off, len;
	struct sqlscan_tok t;

	if (st_skip_word(st, "or"))
		st_skip_word(st, "replace");
	if (!st_skip_word(st, "global"))
		st_skip_word(st, "local");
	if (st_skip_word(st, "temp") || st_skip_word(st, "temporary"))
		temp = true;
	st_skip_word(st, "unlogged");
	if (!st_skip_word(st, "table"))
		return;
	if (st_skip_word(st, "if") && st_skip_word(st, "not"))
		st_skip_word(st, "exists");
	t = st_peek(st);
	if (!st_is_part(st, &t))
		return;
	char *name = st_name(st, &off, &len);

	if (temp) {
		st_add(&st->temps, name);
		free(name);
		return;
	}
	st_add(&st->made, name);
	st_report(st, SQLTABLES_WRITE, name, off, len);
}

/* True when the token before UPDATE/TRUNCATE starts a statement there. */
static bool
st_at_start(const struct st *st)
{
	return st->prev.kind == SQLSCAN_END || st_punct(st, &st->prev, ';') ||
	    st_punct(st, &st->prev, ')') || st_word(st, &st->prev, "explain");
}

/* The statement words that name a table after them. */
static void
st_verb(struct st *st, const struct sqlscan_tok *t)
{
	static const char *const into_after[] = { "insert", "replace",
		"ignore", "abort", "fail", "rollback", "merge", NULL };

	if (st_word(st, t, "into") && st_word_in(st, &st->prev, into_after)) {
		if (st_word(st, &st->prev, "merge"))
			st->want_using = true;
		st_skip_word(st, "table");
		if (!st_skip_word(st, "function"))
			st_item(st, SQLTABLES_WRITE, false);
	} else if (st_word(st, t, "update") && st_at_start(st)) {
		if (st_skip_word(st, "or")) {
			struct sqlscan_tok w;

			st_take(st, &w);
		}
		struct sqlscan_tok n = st_peek(st);

		if (!st_word(st, &n, "set"))
			st_item(st, SQLTABLES_WRITE, false);
	} else if (st_word(st, t, "truncate") && st_at_start(st)) {
		st_skip_word(st, "table");
		if (st_skip_word(st, "if"))
			st_skip_word(st, "exists");
		st_item(st, SQLTABLES_WRITE, true);
	} else if (st_word(st, t, "alter") && st_skip_word(st, "table")) {
		if (st_skip_word(st, "if"))
			st_skip_word(st, "exists");
		st_item(st, SQLTABLES_WRITE, false);
	} else if (st_word(st, t, "create")) {
		st_create(st);
	}
}

/* FROM, JOIN, USING: the items that follow, in a query. */
static void
st_from(struct st *st, const struct sqlscan_tok *t)
{
	bool query = st->depth == 0 ||
	    (st->depth <= ST_DEPTH && st->par[st->depth].query);

	if (st_word(st, t, "from") && query) {
		if (st_word(st, &st->prev, "delete")) {
			st->want_using = st->depth == 0;
			st_item(st, SQLTABLES_WRITE, false);
		} else if (!st_word(st, &st->prev, "distinct") ||
			   !(st_word(st, &st->prev2, "is") ||
			     st_word(st, &st->prev2, "not"))) {
			st_item(st, SQLTABLES_READ, true);
		}
	} else if (st_word(st, t, "join") &&
		   !st_word(st, &st->prev, "array")) {
		st_item(st, SQLTABLES_READ, true);
	} else if (st_word(st, t, "using") && st->want_using &&
		   st->depth == 0) {
		st->want_using = false;
		st_item(st, SQLTABLES_READ, true);
	}
}

/* A ')' (taken): close its parenthesis; after a FROM item its alias and
 * the items after it; after a CTE's body the next CTE of the list. */
static void
st_close(struct st *st)
{
	bool item = false;

	if (st->depth == 0)
		return;
	if (st->depth <= ST_DEPTH)
		item = st->par[st->depth].item;
	st->depth--;
	if (item && st_after_item(st))
		st_item(st, SQLTABLES_READ, true);
	if (st->cte_depth == st->depth) {
		struct sqlscan_tok t = st_peek(st);

		st->cte_depth = -1;
		if (st_punct(st, &t, ',')) {
			struct sqlscan save = st->s;

			st_take(st, &t);
			if (!st_cte(st))
				st->s = save;
		}
	}
}

/* One solid token of the text, taken. */
static void
st_token(struct st *st, const struct sqlscan_tok *t)
{
	bool first = st->first, expect = st->expect_table;

	st->first = false;
	st->expect_table = false;
	if (first && st->depth <= ST_DEPTH &&
	    (st_word(st, t, "select") || st_word(st, t, "with") ||
	     st_word(st, t, "values") || st_word(st, t, "delete") ||
	     st_word(st, t, "insert") || st_word(st, t, "update")))
		st->par[st->depth].query = true;
	if (expect && st_is_part(st, t)) {
		/* "FROM (a JOIN b ...)": a is an item; give its token back */
		st->s.pos = t->off;
		st->s.line = t->line;
		st_item(st, SQLTABLES_READ, false);
		return;
	}
	if (st_punct(st, t, '(')) {
		st_open(st, false);
	} else if (st_punct(st, t, ')')) {
		st_close(st);
	} else if (st_punct(st, t, ';') && st->depth == 0) {
		st->stmt++;
		st_clear(&st->ctes);
		st->cte_depth = -1;
		st->want_using = false;
	} else if (t->kind == SQLSCAN_WORD) {
		if (st_word(st, t, "with")) {
			st_cte(st);
		} else {
			st_from(st, t);
			st_verb(st, t);
		}
	}
}

void
sqltables_scan(const char *sql, enum sqlscan_dialect dialect,
	       struct sqltables *out)
{
	struct st st;
	struct sqlscan_tok t;

	memset(&st, 0, sizeof st);
	memset(out, 0, sizeof *out);
	sqlscan_init(&st.s, sql, dialect);
	st.out = out;
	st.stmt = 1;
	st.cte_depth = -1;
	st.par[0].query = true;
	while (sqlscan_next_solid(&st.s, &t) != SQLSCAN_END &&
	       t.kind != SQLSCAN_UNTERMINATED) {
		st.taken = 0;
		st_token(&st, &t);
		if (st.taken == 0) {
			st.prev2 = st.prev;
			st.prev = t;
		}
	}
	st_clear(&st.ctes);
	st_clear(&st.temps);
	st_clear(&st.made);
}

void
sqltables_free(struct sqltables *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->refs[i].name);
	free(t->refs);
	t->refs = NULL;
	t->n = 0;
}

/* The part of name after its last '.'. */
static const char *
st_last(const char *name)
{
	const char *d = strrchr(name, '.');

	return d != NULL ? d + 1 : name;
}

bool
sqltables_same(const char *a, const char *b, enum sqlscan_dialect dialect)
{
	int (*cmp)(const char *, const char *) =
		dialect == SQLSCAN_CH ? strcmp : strcasecmp;

	if (cmp(a, b) == 0)
		return true;
	if (strchr(a, '.') != NULL && strchr(b, '.') != NULL)
		return false;
	return cmp(st_last(a), st_last(b)) == 0;
}
