/*
 * sqlscan.c - the one SQL lexer (sqlscan.h) and the wall-clock guard built
 * on it.
 */
#include "sqlscan.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xalloc.h"

/* True for a byte that can start an unquoted identifier. */
static bool
sqlscan_word_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    c >= 0x80;
}

/* True for a byte that can continue an unquoted identifier. */
static bool
sqlscan_word_char(unsigned char c)
{
	return sqlscan_word_start(c) || (c >= '0' && c <= '9') || c == '$';
}

/* True for a byte of a PostgreSQL parameter name after its first. */
static bool
sqlscan_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    (c >= '0' && c <= '9');
}

void
sqlscan_init(struct sqlscan *s, const char *sql, enum sqlscan_dialect dialect)
{
	s->sql = sql;
	s->len = strlen(sql);
	s->pos = 0;
	s->line = 1;
	s->dialect = dialect;
}

/* Length of the quoted run at p (p[0] is the opening quote, `close` the
 * closing one, doubled inside to escape it unless close differs from
 * p[0]), or 0 when it does not end; backslash escapes when `bs`. */
static size_t
sqlscan_quoted(const char *p, size_t n, char close, bool bs)
{
	size_t i = 1;

	while (i < n) {
		if (bs && p[i] == '\\') {
			if (i + 1 >= n)
				return 0;
			i += 2;
			continue;
		}
		if (p[i] == close) {
			if (close == p[0] && i + 1 < n && p[i + 1] == close) {
				i += 2;
				continue;
			}
			return i + 1;
		}
		i++;
	}
	return 0;
}

/* Length of the block comment at p, nested when `nest`; 0 when it does
 * not end. */
static size_t
sqlscan_comment(const char *p, size_t n, bool nest)
{
	size_t i = 2;
	int depth = 1;

	while (i + 1 < n) {
		if (nest && p[i] == '/' && p[i + 1] == '*') {
			depth++;
			i += 2;
		} else if (p[i] == '*' && p[i + 1] == '/') {
			i += 2;
			if (--depth == 0)
				return i;
		} else {
			i++;
		}
	}
	return 0;
}

/* Length of the dollar-quote opening tag at p ("$tag$" or "$$"), or 0. */
static size_t
sqlscan_dollar_tag(const char *p, size_t n)
{
	size_t i = 1;

	if (n > 1 && p[1] == '$')
		return 2;
	if (n < 2 || !sqlscan_word_start((unsigned char)p[1]))
		return 0;
	while (i < n && sqlscan_word_char((unsigned char)p[i]) && p[i] != '$')
		i++;
	return i < n && p[i] == '$' ? i + 1 : 0;
}

/* Lines in p[0..n). */
static int
sqlscan_lines(const char *p, size_t n)
{
	int lines = 0;

	for (size_t i = 0; i < n; i++)
		if (p[i] == '\n')
			lines++;
	return lines;
}

/* Close the token at *t: n bytes of `kind`. */
static enum sqlscan_kind
sqlscan_emit(struct sqlscan *s, struct sqlscan_tok *t, enum sqlscan_kind kind,
	     size_t n)
{
	t->kind = kind;
	t->len = n;
	s->pos += n;
	s->line += sqlscan_lines(s->sql + t->off, n);
	return kind;
}

/* The rest of the text as an unterminated `open`. */
static enum sqlscan_kind
sqlscan_unterminated(struct sqlscan *s, struct sqlscan_tok *t,
		     enum sqlscan_kind open)
{
	t->open = open;
	return sqlscan_emit(s, t, SQLSCAN_UNTERMINATED, s->len - s->pos);
}

/* A quoted token (string or identifier) at the scan position. */
static enum sqlscan_kind
sqlscan_quote(struct sqlscan *s, struct sqlscan_tok *t, size_t skip,
	      char close, bool bs, enum sqlscan_kind kind)
{
	const char *p = s->sql + s->pos + skip;
	size_t n = sqlscan_quoted(p, s->len - s->pos - skip, close, bs);

	if (n == 0)
		return sqlscan_unterminated(s, t, kind);
	return sqlscan_emit(s, t, kind, skip + n);
}

enum sqlscan_kind
sqlscan_next(struct sqlscan *s, struct sqlscan_tok *t)
{
	const char *p = s->sql + s->pos;
	size_t left = s->len - s->pos, n, tag;
	bool pg = s->dialect == SQLSCAN_PG;
	bool ch = s->dialect == SQLSCAN_CH;
	unsigned char c;

	t->off = s->pos;
	t->line = s->line;
	t->open = SQLSCAN_END;
	if (left == 0) {
		t->kind = SQLSCAN_END;
		t->len = 0;
		return SQLSCAN_END;
	}
	c = (unsigned char)p[0];
	if (strchr(" \t\n\r\f\v", c) != NULL) {
		for (n = 1; n < left && strchr(" \t\n\r\f\v", p[n]) != NULL; n++)
			;
		return sqlscan_emit(s, t, SQLSCAN_SPACE, n);
	}
	if (c == '-' && left > 1 && p[1] == '-')
		return sqlscan_emit(s, t, SQLSCAN_COMMENT, strcspn(p, "\n"));
	if (c == '/' && left > 1 && p[1] == '*') {
		n = sqlscan_comment(p, left, pg);
		if (n == 0 && (pg || ch))
			return sqlscan_unterminated(s, t, SQLSCAN_COMMENT);
		return sqlscan_emit(s, t, SQLSCAN_COMMENT, n ? n : left);
	}
	if (sqlscan_word_start(c)) {
		for (n = 1; n < left && sqlscan_word_char((unsigned char)p[n]);
		     n++)
			;
		if (pg && n == 1 && (c == 'E' || c == 'e') && left > 1 &&
		    p[1] == '\'')
			return sqlscan_quote(s, t, 1, '\'', true,
			    SQLSCAN_STRING);
		return sqlscan_emit(s, t, SQLSCAN_WORD, n);
	}
	if (c >= '0' && c <= '9') {
		for (n = 1; n < left && (sqlscan_name_char((unsigned char)p[n]) ||
		     p[n] == '.'); n++)
			;
		return sqlscan_emit(s, t, SQLSCAN_NUMBER, n);
	}
	if (c == '\'')
		return sqlscan_quote(s, t, 0, '\'', ch, SQLSCAN_STRING);
	if (c == '"')
		return sqlscan_quote(s, t, 0, '"', ch, SQLSCAN_QUOTED);
	if (!pg && c == '`')
		return sqlscan_quote(s, t, 0, '`', ch, SQLSCAN_QUOTED);
	if (!pg && !ch && c == '[')
		return sqlscan_quote(s, t, 0, ']', false, SQLSCAN_QUOTED);
	if (c == '$' && pg) {
		if (left > 1 && p[1] >= '0' && p[1] <= '9') {
			n = 1 + strspn(p + 1, "0123456789");
			return sqlscan_emit(s, t, SQLSCAN_PARAM, n);
		}
		tag = sqlscan_dollar_tag(p, left);
		if (tag != 0) {
			const char *end = p + tag;

			for (;;) {
				end = strchr(end, '$');
				if (end == NULL)
					return sqlscan_unterminated(s, t,
					    SQLSCAN_DOLLAR);
				if (strncmp(end, p, tag) == 0)
					break;
				end++;
			}
			return sqlscan_emit(s, t, SQLSCAN_DOLLAR,
			    (size_t)(end - p) + tag);
		}
		return sqlscan_emit(s, t, SQLSCAN_PUNCT, 1);
	}
	if (c == ':' && left > 1 && p[1] == ':' && pg)
		return sqlscan_emit(s, t, SQLSCAN_CAST, 2);
	if (c == ':' && left > 1 && (unsigned char)p[1] < 0x80 &&
	    sqlscan_word_start((unsigned char)p[1])) {
		for (n = 2; n < left && sqlscan_name_char((unsigned char)p[n]);
		     n++)
			;
		return sqlscan_emit(s, t, SQLSCAN_PARAM, n);
	}
	if (!pg && !ch && (c == '$' || c == '@' || c == ':')) {
		for (n = 1; n < left && sqlscan_word_char((unsigned char)p[n]);
		     n++)
			;
		return sqlscan_emit(s, t, n > 1 ? SQLSCAN_PARAM : SQLSCAN_PUNCT,
		    n);
	}
	if (!pg && !ch && c == '?') {
		n = 1 + strspn(p + 1, "0123456789");
		return sqlscan_emit(s, t, SQLSCAN_PARAM, n);
	}
	return sqlscan_emit(s, t, SQLSCAN_PUNCT, 1);
}

enum sqlscan_kind
sqlscan_next_solid(struct sqlscan *s, struct sqlscan_tok *t)
{
	enum sqlscan_kind k;

	do
		k = sqlscan_next(s, t);
	while (k == SQLSCAN_SPACE || k == SQLSCAN_COMMENT);
	return k;
}

bool
sqlscan_is_word(const struct sqlscan *s, const struct sqlscan_tok *t,
		const char *w)
{
	return t->kind == SQLSCAN_WORD && strlen(w) == t->len &&
	    strncasecmp(s->sql + t->off, w, t->len) == 0;
}

bool
sqlscan_is_punct(const struct sqlscan *s, const struct sqlscan_tok *t, char c)
{
	return t->kind == SQLSCAN_PUNCT && s->sql[t->off] == c;
}

/* ---- the wall-clock guard ---------------------------------------------- */

/* A word among the NULL-terminated list, or NULL. */
static const char *
sqlscan_word_in(const struct sqlscan *s, const struct sqlscan_tok *t,
		const char *const *list)
{
	for (size_t i = 0; list[i] != NULL; i++)
		if (sqlscan_is_word(s, t, list[i]))
			return list[i];
	return NULL;
}

/* True when a string or quoted token holds `want` (any case), ignoring
 * blanks around it when `trim` (PostgreSQL's date input does). */
static bool
sqlscan_holds(const struct sqlscan *s, const struct sqlscan_tok *t,
	      const char *want, bool trim)
{
	const char *p = s->sql + t->off;
	size_t n = t->len;

	if (t->kind != SQLSCAN_STRING && t->kind != SQLSCAN_QUOTED)
		return false;
	if (p[0] == 'E' || p[0] == 'e') {
		p++;
		n--;
	}
	if (n < 2)
		return false;
	p++;
	n -= 2;
	while (trim && n > 0 && strchr(" \t\n\r", p[0]) != NULL) {
		p++;
		n--;
	}
	while (trim && n > 0 && strchr(" \t\n\r", p[n - 1]) != NULL)
		n--;
	return n == strlen(want) && strncasecmp(p, want, n) == 0;
}

/* The PostgreSQL special date inputs that read the clock, or NULL. */
static const char *
sqlscan_pg_special(const struct sqlscan *s, const struct sqlscan_tok *t)
{
	static const char *const specials[] = {
		"now", "today", "tomorrow", "yesterday", NULL
	};
	static const char *const spelled[] = {
		"'now'", "'today'", "'tomorrow'", "'yesterday'"
	};

	if (t->kind != SQLSCAN_STRING)
		return NULL;
	for (size_t i = 0; specials[i] != NULL; i++)
		if (sqlscan_holds(s, t, specials[i], true))
			return spelled[i];
	return NULL;
}

/* True for a date or time type name (the word after :: or AS, or
 * before a literal). */
static bool
sqlscan_is_datetype(const struct sqlscan *s, const struct sqlscan_tok *t)
{
	static const char *const types[] = {
		"date", "timestamp", "timestamptz", "time", "timetz", "zone",
		"abstime", NULL
	};

	return sqlscan_word_in(s, t, types) != NULL;
}

/* The SQLite date and time functions, and how a clock read by each is
 * spelled in messages. */
static const char *const sqlscan_lite_fns[] = {
	"date", "time", "datetime", "julianday", "unixepoch", "strftime", NULL
};
static const char *const sqlscan_lite_calls[] = {
	"date()", "time()", "datetime()", "julianday()", "unixepoch()",
	"strftime() without a time value", NULL
};

/* A read of the clock found, or none (off -1). */
struct sqlscan_hit {
	long off;
	const char *what;
};

/* The clock reads a token makes on its own (words, literals, PostgreSQL's
 * functions), looking at most three tokens ahead; prev and prev2 are the
 * two solid tokens before it. */
static struct sqlscan_hit
sqlscan_clock_token(const struct sqlscan *s, const struct sqlscan_tok *t,
		    const struct sqlscan_tok *prev,
		    const struct sqlscan_tok *prev2)
{
	static const char *const words[] = {
		"CURRENT_DATE", "CURRENT_TIMESTAMP", "CURRENT_TIME", NULL
	};
	static const char *const pg_words[] = {
		"LOCALTIMESTAMP", "LOCALTIME", NULL
	};
	static const char *const pg_fns[] = {
		"now", "clock_timestamp", "statement_timestamp",
		"transaction_timestamp", "timeofday", NULL
	};
	static const char *const pg_calls[] = {
		"now()", "clock_timestamp()", "statement_timestamp()",
		"transaction_timestamp()", "timeofday()", NULL
	};
	static const char *const ch_fns[] = { "now", "today", "yesterday",
		NULL };
	static const char *const ch_calls[] = { "now()", "today()",
		"yesterday()", NULL };
	struct sqlscan_hit none = { -1, NULL }, hit = { (long)t->off, NULL };
	bool pg = s->dialect == SQLSCAN_PG;
	struct sqlscan look;
	struct sqlscan_tok n;

	if ((hit.what = sqlscan_word_in(s, t, words)) != NULL ||
	    (pg && (hit.what = sqlscan_word_in(s, t, pg_words)) != NULL))
		return hit;
	if (t->kind == SQLSCAN_STRING && sqlscan_holds(s, t, "now", false)) {
		hit.what = "'now'";
		return hit;
	}
	look = *s;
	sqlscan_next_solid(&look, &n);
	if (pg && (hit.what = sqlscan_pg_special(s, t)) != NULL) {
		/* date 'today', 'today'::date, CAST('today' AS date) */
		if (sqlscan_is_datetype(s, prev) ||
		    (n.kind == SQLSCAN_CAST &&
		     sqlscan_next_solid(&look, &n) == SQLSCAN_WORD &&
		     sqlscan_is_datetype(s, &n)) ||
		    (sqlscan_is_word(s, &n, "as") &&
		     sqlscan_is_punct(s, prev, '(') &&
		     sqlscan_is_word(s, prev2, "cast") &&
		     sqlscan_next_solid(&look, &n) == SQLSCAN_WORD &&
		     sqlscan_is_datetype(s, &n)))
			return hit;
		return none;
	}
	if (pg && t->kind == SQLSCAN_WORD && sqlscan_is_punct(s, &n, '('))
		for (size_t i = 0; pg_fns[i] != NULL; i++)
			if (sqlscan_is_word(s, t, pg_fns[i])) {
				hit.what = pg_calls[i];
				return hit;
			}
	if (s->dialect == SQLSCAN_CH && t->kind == SQLSCAN_WORD &&
	    sqlscan_is_punct(s, &n, '('))
		for (size_t i = 0; ch_fns[i] != NULL; i++)
			if (sqlscan_is_word(s, t, ch_fns[i])) {
				hit.what = ch_calls[i];
				return hit;
			}
	return none;
}

/* The SQLite date/time function a token calls (its index in
 * sqlscan_lite_fns: the word is followed by '('), or -1. */
static int
sqlscan_lite_call(const struct sqlscan *s, const struct sqlscan_tok *t)
{
	struct sqlscan look = *s;
	struct sqlscan_tok n;

	if (s->dialect != SQLSCAN_SQLITE || t->kind != SQLSCAN_WORD)
		return -1;
	sqlscan_next_solid(&look, &n);
	if (!sqlscan_is_punct(s, &n, '('))
		return -1;
	for (int i = 0; sqlscan_lite_fns[i] != NULL; i++)
		if (sqlscan_is_word(s, t, sqlscan_lite_fns[i]))
			return i;
	return -1;
}

/*
 * A SQLite date/time call whose arguments are being read, to learn
 * whether it is given a time value (strftime's second argument, the
 * others' first).  Only tokens at its own parenthesis level change it:
 * inside a nested parenthesis the argument already has a token, the '('.
 */
struct sqlscan_call {
	long level;            /* the parenthesis depth inside its '(' */
	int fn;                /* index in sqlscan_lite_fns */
	size_t off;            /* its name's offset */
	int arg;               /* arguments ended before the current one */
	bool empty;            /* the current argument has no token yet */
	struct sqlscan_hit in; /* the first clock read met inside it */
};

/*
 * Token t at call c's own level.  True when it ends what c decides (its
 * ')', the ',' after its time value, or "now" as that value), with *out
 * the clock read c makes, else the first one met inside it (off -1: none).
 */
static bool
sqlscan_call_step(const struct sqlscan *s, const struct sqlscan_tok *t,
		  struct sqlscan_call *c, struct sqlscan_hit *out)
{
	int want = strcmp(sqlscan_lite_fns[c->fn], "strftime") == 0 ? 1 : 0;
	bool comma = sqlscan_is_punct(s, t, ',');

	if (comma && c->arg != want) {
		c->arg++;
		c->empty = true;
		return false;
	}
	if (!comma && !sqlscan_is_punct(s, t, ')')) {
		if (c->arg == want && c->empty && t->kind == SQLSCAN_QUOTED &&
		    sqlscan_holds(s, t, "now", false)) {
			out->off = (long)t->off;
			out->what = "\"now\"";
			return true;
		}
		c->empty = false;
		return false;
	}
	/* its ')', or the ',' after its time value */
	if (c->arg < want || (c->arg == want && c->empty)) {
		out->off = (long)c->off;
		out->what = sqlscan_lite_calls[c->fn];
	} else {
		*out = c->in;
	}
	return true;
}

/*
 * Found: the clock read h, made by a token after every open call's name.
 * The open calls come first (each is decided before what is inside it):
 * true when no call is open, else h waits in the innermost (the first one
 * met there is kept).
 */
static bool
sqlscan_found(struct sqlscan_call *calls, size_t ncalls, struct sqlscan_hit h)
{
	if (h.off < 0)
		return false;
	if (ncalls == 0)
		return true;
	if (calls[ncalls - 1].in.off < 0)
		calls[ncalls - 1].in = h;
	return false;
}

/*
 * One pass over the tokens, linear in the text however deep the calls
 * nest: the first read in the order of the tokens that make it, as if
 * each SQLite call's arguments were read ahead when its name is met (the
 * open calls are a stack, decided innermost first).
 */
long
sqlscan_wall_clock(const char *sql, enum sqlscan_dialect dialect,
		   const char **what)
{
	struct sqlscan s;
	struct sqlscan_tok t, prev = { SQLSCAN_END, SQLSCAN_END, 0, 0, 0 };
	struct sqlscan_tok prev2 = prev;
	struct sqlscan_call *calls = NULL;
	struct sqlscan_hit h = { -1, NULL };
	size_t ncalls = 0, cap = 0;
	long depth = 0;
	int opening = -1; /* a call's name was met: its '(' is next */
	bool done = false;

	sqlscan_init(&s, sql, dialect);
	for (; !done; prev2 = prev, prev = t) {
		enum sqlscan_kind k = sqlscan_next_solid(&s, &t);

		if (k == SQLSCAN_END || k == SQLSCAN_UNTERMINATED) {
			h.off = -1;
			break;
		}
		if (ncalls > 0 && calls[ncalls - 1].level == depth &&
		    sqlscan_call_step(&s, &t, &calls[ncalls - 1], &h)) {
			ncalls--;
			if ((done = sqlscan_found(calls, ncalls, h)))
				break;
		}
		if (sqlscan_is_punct(&s, &t, '('))
			depth++;
		else if (sqlscan_is_punct(&s, &t, ')'))
			depth--;
		if (opening >= 0) {
			if (ncalls == cap) {
				cap = cap ? cap * 2 : 16;
				calls = xreallocarray(calls, cap, sizeof *calls);
			}
			calls[ncalls++] = (struct sqlscan_call){ depth, opening,
				prev.off, 0, true, { -1, NULL } };
			opening = -1;
			continue;
		}
		h = sqlscan_clock_token(&s, &t, &prev, &prev2);
		done = sqlscan_found(calls, ncalls, h);
		opening = sqlscan_lite_call(&s, &t);
	}
	free(calls);
	if (h.off >= 0)
		*what = h.what;
	return h.off;
}

void
sqlscan_quote_ident(char *buf, size_t len, const char *name)
{
	size_t n = strlen(buf);

	if (n + 1 < len)
		buf[n++] = '"';
	for (const char *p = name; *p && n + 2 < len; p++) {
		if (*p == '"')
			buf[n++] = '"';
		buf[n++] = *p;
	}
	if (n + 1 < len)
		buf[n++] = '"';
	buf[n] = '\0';
}
