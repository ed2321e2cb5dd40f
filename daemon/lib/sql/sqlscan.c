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

/* A PostgreSQL token at a '$': a $1 parameter, a $tag$...$tag$ string
 * (unterminated without its closing tag), else the punctuation. */
static enum sqlscan_kind
sqlscan_dollar(struct sqlscan *s, struct sqlscan_tok *t)
{
	const char *p = s->sql + s->pos;
	size_t left = s->len - s->pos, n, tag;

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

/* A token at c that is neither space, comment, word, number nor quoted:
 * a parameter or cast of the dialect, a dollar string, else one byte of
 * punctuation. */
static enum sqlscan_kind
sqlscan_sigil(struct sqlscan *s, struct sqlscan_tok *t, unsigned char c)
{
	const char *p = s->sql + s->pos;
	size_t left = s->len - s->pos, n;
	bool pg = s->dialect == SQLSCAN_PG;
	bool ch = s->dialect == SQLSCAN_CH;

	if (c == '$' && pg)
		return sqlscan_dollar(s, t);
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
sqlscan_next(struct sqlscan *s, struct sqlscan_tok *t)
{
	const char *p = s->sql + s->pos;
	size_t left = s->len - s->pos, n;
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
	return sqlscan_sigil(s, t, c);
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

bool
sqlscan_statement(const char *sql, enum sqlscan_dialect dialect, int n,
		  size_t *off, size_t *len, int *line)
{
	struct sqlscan s;
	struct sqlscan_tok t;
	int k = 0;
	bool open = false;

	sqlscan_init(&s, sql, dialect);
	while (sqlscan_next_solid(&s, &t) != SQLSCAN_END) {
		if (sqlscan_is_punct(&s, &t, ';')) {
			if (open && k == n)
				return true;
			open = false;
			continue;
		}
		if (!open) {
			open = true;
			k++;
			*off = t.off;
			*line = t.line;
		}
		*len = t.off + t.len - *off;
	}
	return open && k == n;
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

/* ---- transaction control ------------------------------------------------ */

/* The PRAGMAs refused (sqlscan.h), and how each is spelled in messages. */
#define SQLSCAN_PRAGMA(n) { n, "PRAGMA " n }
static const struct sqlscan_pragma {
	const char *name, *spelled;
} sqlscan_pragmas[] = {
	SQLSCAN_PRAGMA("auto_vacuum"),
	SQLSCAN_PRAGMA("busy_timeout"),
	SQLSCAN_PRAGMA("journal_mode"),
	SQLSCAN_PRAGMA("locking_mode"),
	SQLSCAN_PRAGMA("page_size"),
	SQLSCAN_PRAGMA("query_only"),
	SQLSCAN_PRAGMA("read_uncommitted"),
	SQLSCAN_PRAGMA("schema_version"),
	SQLSCAN_PRAGMA("synchronous"),
	SQLSCAN_PRAGMA("temp_store"),
	SQLSCAN_PRAGMA("temp_store_directory"),
	SQLSCAN_PRAGMA("wal_autocheckpoint"),
	SQLSCAN_PRAGMA("wal_checkpoint"),
	SQLSCAN_PRAGMA("writable_schema"),
};

const char *
sqlscan_txn_pragma(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof sqlscan_pragmas /
	     sizeof sqlscan_pragmas[0]; i++)
		if (strlen(sqlscan_pragmas[i].name) == len &&
		    strncasecmp(name, sqlscan_pragmas[i].name, len) == 0)
			return sqlscan_pragmas[i].spelled;
	return NULL;
}

/* The words that end the transaction, and how each form is spelled. */
static const struct sqlscan_end {
	const char *word, *plain, *chain, *prepared;
} sqlscan_ends[] = {
	{ "commit", "COMMIT", "COMMIT AND CHAIN", "COMMIT PREPARED" },
	{ "end", "END", "END AND CHAIN", NULL },
	{ "rollback", "ROLLBACK", "ROLLBACK AND CHAIN", "ROLLBACK PREPARED" },
	{ "abort", "ABORT", "ABORT AND CHAIN", NULL },
};

/* COMMIT, END, ROLLBACK or ABORT just read by s: how it ends the
 * transaction, or NULL for ROLLBACK TO a savepoint. */
static const char *
sqlscan_txn_end(struct sqlscan *s, const struct sqlscan_end *e)
{
	struct sqlscan_tok n;

	sqlscan_next_solid(s, &n);
	if (sqlscan_is_word(s, &n, "work") ||
	    sqlscan_is_word(s, &n, "transaction"))
		sqlscan_next_solid(s, &n);
	if (sqlscan_is_word(s, &n, "to") && strcmp(e->word, "rollback") == 0)
		return NULL;
	if (sqlscan_is_word(s, &n, "prepared") && e->prepared != NULL)
		return e->prepared;
	if (sqlscan_is_word(s, &n, "and")) {
		sqlscan_next_solid(s, &n);
		if (sqlscan_is_word(s, &n, "chain"))
			return e->chain;
	}
	return e->plain;
}

/* SQLite's PRAGMA [schema.]name ...: the spelling of a refused one. */
static const char *
sqlscan_txn_pragma_stmt(struct sqlscan *s)
{
	struct sqlscan_tok n, dot, name;
	struct sqlscan look;
	const char *p;
	size_t len;

	sqlscan_next_solid(s, &n);
	look = *s;
	sqlscan_next_solid(&look, &dot);
	name = n;
	if (sqlscan_is_punct(&look, &dot, '.'))
		sqlscan_next_solid(&look, &name);
	if (name.kind != SQLSCAN_WORD && name.kind != SQLSCAN_QUOTED &&
	    name.kind != SQLSCAN_STRING)
		return NULL;
	p = s->sql + name.off;
	len = name.len;
	if (name.kind != SQLSCAN_WORD) {
		if (len < 2)
			return NULL;
		p++;
		len -= 2;
	}
	return sqlscan_txn_pragma(p, len);
}

/* A DO block's body (a string or dollar-quoted token) as plain text,
 * malloc'd: its quotes taken off, '' (and in an E-string \x) undone. */
static char *
sqlscan_do_body(const struct sqlscan *s, const struct sqlscan_tok *t)
{
	const char *p = s->sql + t->off;
	size_t n = t->len, tag, i, k = 0;
	bool bs = false;
	char *out;

	if (t->kind == SQLSCAN_DOLLAR) {
		tag = sqlscan_dollar_tag(p, n);
		return xstrndup(p + tag, n - 2 * tag);
	}
	if (p[0] == 'E' || p[0] == 'e') {
		bs = true;
		p++;
		n--;
	}
	out = xmalloc(n);
	for (i = 1; i + 1 < n; i++) {
		if ((p[i] == '\\' && bs) || (p[i] == '\'' && p[i + 1] == '\''))
			i++;
		out[k++] = p[i];
	}
	out[k] = '\0';
	return out;
}

/* PostgreSQL's DO: "COMMIT in a DO block" when its body (as PL/pgSQL
 * tokens) holds the word COMMIT, likewise ROLLBACK; else NULL. */
static const char *
sqlscan_txn_do(struct sqlscan *s)
{
	struct sqlscan_tok t;
	struct sqlscan body;
	const char *what = NULL;
	char *text;

	for (;;) {
		enum sqlscan_kind k = sqlscan_next_solid(s, &t);

		if (k == SQLSCAN_END || k == SQLSCAN_UNTERMINATED ||
		    sqlscan_is_punct(s, &t, ';'))
			return NULL;
		if (sqlscan_is_word(s, &t, "language")) {
			sqlscan_next_solid(s, &t); /* its name */
			continue;
		}
		if (k == SQLSCAN_STRING || k == SQLSCAN_DOLLAR)
			break;
	}
	text = sqlscan_do_body(s, &t);
	sqlscan_init(&body, text, SQLSCAN_PG);
	while (what == NULL && sqlscan_next_solid(&body, &t) != SQLSCAN_END &&
	       t.kind != SQLSCAN_UNTERMINATED) {
		if (sqlscan_is_word(&body, &t, "commit"))
			what = "COMMIT in a DO block";
		else if (sqlscan_is_word(&body, &t, "rollback"))
			what = "ROLLBACK in a DO block";
	}
	free(text);
	return what;
}

/* How the statement whose first token is t (s just after it) controls
 * the transaction, or NULL. */
static const char *
sqlscan_txn_stmt(const struct sqlscan *s0, const struct sqlscan_tok *t0)
{
	struct sqlscan s = *s0;
	struct sqlscan_tok t = *t0, n;
	bool pg = s.dialect == SQLSCAN_PG;

	if (!pg && sqlscan_is_word(&s, &t, "explain")) {
		sqlscan_next_solid(&s, &t);
		if (sqlscan_is_word(&s, &t, "query")) {
			sqlscan_next_solid(&s, &t); /* PLAN */
			sqlscan_next_solid(&s, &t);
		}
	}
	if (t.kind != SQLSCAN_WORD)
		return NULL;
	if (sqlscan_is_word(&s, &t, "begin"))
		return "BEGIN";
	for (size_t i = 0; i < sizeof sqlscan_ends / sizeof sqlscan_ends[0];
	     i++)
		if (sqlscan_is_word(&s, &t, sqlscan_ends[i].word))
			return sqlscan_txn_end(&s, &sqlscan_ends[i]);
	if (sqlscan_is_word(&s, &t, "start") ||
	    sqlscan_is_word(&s, &t, "prepare")) {
		bool start = sqlscan_is_word(&s, &t, "start");

		sqlscan_next_solid(&s, &n);
		if (!sqlscan_is_word(&s, &n, "transaction"))
			return NULL;
		return start ? "START TRANSACTION" : "PREPARE TRANSACTION";
	}
	if (!pg) {
		if (sqlscan_is_word(&s, &t, "attach"))
			return "ATTACH";
		if (sqlscan_is_word(&s, &t, "detach"))
			return "DETACH";
		if (sqlscan_is_word(&s, &t, "vacuum"))
			return "VACUUM";
		if (sqlscan_is_word(&s, &t, "pragma"))
			return sqlscan_txn_pragma_stmt(&s);
		return NULL;
	}
	if (sqlscan_is_word(&s, &t, "set")) {
		sqlscan_next_solid(&s, &n);
		if (sqlscan_is_word(&s, &n, "session") ||
		    sqlscan_is_word(&s, &n, "local")) {
			bool session = sqlscan_is_word(&s, &n, "session");

			sqlscan_next_solid(&s, &n);
			if (session && sqlscan_is_word(&s, &n, "characteristics"))
				return "SET SESSION CHARACTERISTICS";
		}
		return sqlscan_is_word(&s, &n, "transaction") ?
		    "SET TRANSACTION" : NULL;
	}
	if (sqlscan_is_word(&s, &t, "do"))
		return sqlscan_txn_do(&s);
	return NULL;
}

/* True when the statement at t (s after it) is SQLite's CREATE [TEMP]
 * TRIGGER, whose body holds statements of its own. */
static bool
sqlscan_is_trigger(const struct sqlscan *s0, const struct sqlscan_tok *t0)
{
	struct sqlscan s = *s0;
	struct sqlscan_tok t;

	if (s.dialect != SQLSCAN_SQLITE || !sqlscan_is_word(&s, t0, "create"))
		return false;
	sqlscan_next_solid(&s, &t);
	if (sqlscan_is_word(&s, &t, "temp") ||
	    sqlscan_is_word(&s, &t, "temporary"))
		sqlscan_next_solid(&s, &t);
	return sqlscan_is_word(&s, &t, "trigger");
}

/*
 * One pass over the tokens, cutting statements as the drivers do
 * (sqlscan.h); each statement is judged by its leading words, read ahead
 * of the pass, so the whole is linear in the text but for DO bodies,
 * each scanned once more.
 */
long
sqlscan_txn(const char *sql, enum sqlscan_dialect dialect, int flags,
	    struct sqlscan_txn *out)
{
	struct sqlscan s;
	struct sqlscan_tok t;
	bool pg = dialect == SQLSCAN_PG, start = true, trigger = false;
	bool body = false;
	long depth = 0, cases = 0;
	int n = 0;

	out->off = -1;
	out->stmt = 0;
	out->what = NULL;
	sqlscan_init(&s, sql, dialect);
	for (;;) {
		enum sqlscan_kind k = sqlscan_next_solid(&s, &t);
		const char *what;

		if (k == SQLSCAN_END || k == SQLSCAN_UNTERMINATED)
			break;
		if (start) {
			if (sqlscan_is_punct(&s, &t, ';'))
				continue;
			start = false;
			body = false;
			depth = cases = 0;
			n++;
			if ((n > 1 || (flags & SQLSCAN_TXN_EXPR) == 0) &&
			    (what = sqlscan_txn_stmt(&s, &t)) != NULL) {
				out->off = (long)t.off;
				out->stmt = n;
				out->what = what;
				return out->off;
			}
			trigger = sqlscan_is_trigger(&s, &t);
		}
		if (body) {
			/* a trigger's or BEGIN ATOMIC's statements, to END */
			if (sqlscan_is_word(&s, &t, "case"))
				cases++;
			else if (sqlscan_is_word(&s, &t, "end") && cases > 0)
				cases--;
			else if (sqlscan_is_word(&s, &t, "end"))
				body = false;
			continue;
		}
		if (sqlscan_is_word(&s, &t, "begin")) {
			struct sqlscan look = s;
			struct sqlscan_tok a;

			sqlscan_next_solid(&look, &a);
			if (trigger || (pg && sqlscan_is_word(&look, &a, "atomic"))) {
				body = true;
				cases = 0;
			}
		} else if (sqlscan_is_punct(&s, &t, '(')) {
			depth++;
		} else if (sqlscan_is_punct(&s, &t, ')')) {
			if (depth > 0)
				depth--;
		} else if (sqlscan_is_punct(&s, &t, ';') && (!pg || depth == 0)) {
			start = true;
		}
	}
	return -1;
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
