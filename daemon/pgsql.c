/*
 * pgsql.c - the PostgreSQL statement splitter and parameter translator
 * (pgsql.h).
 *
 * One pass over the script with a small state machine per token kind: a
 * quoted thing (string, E-string, quoted identifier, dollar quote,
 * comment) is copied whole, so what it holds can never split a statement
 * or name a parameter; everything else is copied byte by byte except
 * `;` at parenthesis depth 0 (ends the statement) and `:name` (becomes
 * $n).  Words are read whole so that `E'` is only an escape-string prefix
 * when E is a word of its own, and `$` inside a word (a$b$) never starts
 * a dollar quote, as in PostgreSQL's lexer.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgsql.h"

/* A growable byte buffer. */
struct pgsql_buf {
	char *p;
	size_t len, cap;
};

/* The statement being built. */
struct pgsql_cur {
	struct pgsql_buf text;
	char **names;
	size_t nnames;
	bool started; /* a token other than blanks and comments seen */
	int line;
	int depth;    /* parentheses */
};

/* malloc-family result that cannot be NULL: no way to go on without it. */
static void *
pgsql_check_alloc(void *p)
{
	if (p == NULL)
		abort();
	return p;
}

/* Append n bytes to b. */
static void
pgsql_buf_add(struct pgsql_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		while (b->len + n + 1 > b->cap)
			b->cap = b->cap == 0 ? 256 : b->cap * 2;
		b->p = pgsql_check_alloc(realloc(b->p, b->cap));
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* True for a byte that can start an unquoted identifier. */
static bool
pgsql_word_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    c >= 0x80;
}

/* True for a byte that can continue an unquoted identifier. */
static bool
pgsql_word_char(unsigned char c)
{
	return pgsql_word_start(c) || (c >= '0' && c <= '9') || c == '$';
}

/* True for a byte of a parameter name after its first. */
static bool
pgsql_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    (c >= '0' && c <= '9');
}

/* True for a byte of a dollar-quote tag after its first. */
static bool
pgsql_tag_char(unsigned char c)
{
	return pgsql_word_char(c) && c != '$';
}

/* Lines in s[0..n). */
static int
pgsql_lines(const char *s, size_t n)
{
	int lines = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '\n')
			lines++;
	return lines;
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
	cur->names = pgsql_check_alloc(realloc(cur->names,
	    (cur->nnames + 1) * sizeof *cur->names));
	cur->names[cur->nnames] = pgsql_check_alloc(strndup(name, n));
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
	out->stmts = pgsql_check_alloc(realloc(out->stmts,
	    (out->n + 1) * sizeof *out->stmts));
	st = &out->stmts[out->n++];
	st->sql = cur->text.p;
	st->names = cur->names;
	st->nnames = cur->nnames;
	st->line = cur->line;
	memset(cur, 0, sizeof *cur);
}

/* Length of the quoted run at s (s[0] is the opening quote q), or 0 when
 * it does not end; backslash escapes the next byte when `bs`. */
static size_t
pgsql_quoted(const char *s, char q, bool bs)
{
	size_t i = 1;

	for (;;) {
		if (s[i] == '\0')
			return 0;
		if (bs && s[i] == '\\') {
			if (s[i + 1] == '\0')
				return 0;
			i += 2;
			continue;
		}
		if (s[i] == q) {
			if (s[i + 1] == q) {
				i += 2;
				continue;
			}
			return i + 1;
		}
		i++;
	}
}

/* Length of the nested comment at s ("/" "*"), or 0 when it does not end. */
static size_t
pgsql_comment(const char *s)
{
	size_t i = 2;
	int depth = 1;

	while (s[i] != '\0') {
		if (s[i] == '/' && s[i + 1] == '*') {
			depth++;
			i += 2;
		} else if (s[i] == '*' && s[i + 1] == '/') {
			i += 2;
			if (--depth == 0)
				return i;
		} else {
			i++;
		}
	}
	return 0;
}

/* Length of the dollar-quote opening tag at s ("$tag$" or "$$"), or 0. */
static size_t
pgsql_dollar_tag(const char *s)
{
	size_t i = 1;

	if (s[1] == '$')
		return 2;
	if (!pgsql_word_start((unsigned char)s[1]))
		return 0;
	while (pgsql_tag_char((unsigned char)s[i]))
		i++;
	return s[i] == '$' ? i + 1 : 0;
}

/* Split and translate; see pgsql.h. */
int
pgsql_parse(const char *sql, struct pgsql_script *out, struct err *err)
{
	struct pgsql_cur cur;
	const char *s = sql, *end;
	size_t n, tag, k;
	char num[24];
	int line = 1, rc = 0;
	bool estr;

	out->stmts = NULL;
	out->n = 0;
	memset(&cur, 0, sizeof cur);
	while (*s != '\0') {
		unsigned char c = (unsigned char)*s;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		    c == '\f' || c == '\v') {
			if (c == '\n')
				line++;
			pgsql_buf_add(&cur.text, s, 1);
			s++;
			continue;
		}
		if (c == '-' && s[1] == '-') {
			n = strcspn(s, "\n");
			pgsql_buf_add(&cur.text, s, n);
			s += n;
			continue;
		}
		if (c == '/' && s[1] == '*') {
			n = pgsql_comment(s);
			if (n == 0) {
				rc = err_set(err, EXIT_BAD_INPUT, "unterminated "
				    "/* comment starting at line %d", line);
				break;
			}
			pgsql_buf_add(&cur.text, s, n);
			line += pgsql_lines(s, n);
			s += n;
			continue;
		}
		if (c == ';' && cur.depth == 0) {
			pgsql_cur_end(&cur, out);
			s++;
			continue;
		}
		if (!cur.started) {
			cur.started = true;
			cur.line = line;
		}
		if (pgsql_word_start(c)) {
			for (n = 1; pgsql_word_char((unsigned char)s[n]); n++)
				;
			estr = n == 1 && (c == 'E' || c == 'e') && s[1] == '\'';
			pgsql_buf_add(&cur.text, s, n);
			s += n;
			if (!estr)
				continue;
			c = '\'';
		}
		if (c == '\'' || c == '"') {
			estr = c == '\'' && s > sql && (s[-1] == 'E' ||
			    s[-1] == 'e') && (s - 1 == sql ||
			    !pgsql_word_char((unsigned char)s[-2]));
			n = pgsql_quoted(s, (char)c, estr);
			if (n == 0) {
				rc = err_set(err, EXIT_BAD_INPUT, "unterminated "
				    "%s starting at line %d", c == '"' ?
				    "quoted identifier" : "quoted string",
				    line);
				break;
			}
			pgsql_buf_add(&cur.text, s, n);
			line += pgsql_lines(s, n);
			s += n;
			continue;
		}
		if (c == '$') {
			if (s[1] >= '0' && s[1] <= '9') {
				n = strspn(s + 1, "0123456789");
				rc = err_set(err, EXIT_BAD_INPUT, "positional "
				    "parameter $%.*s at line %d: name the value "
				    "instead (:partition, :partition_start, "
				    ":partition_end)", (int)(n > 9 ? 9 : n),
				    s + 1, line);
				break;
			}
			tag = pgsql_dollar_tag(s);
			if (tag != 0) {
				char *t = pgsql_check_alloc(strndup(s, tag));

				end = strstr(s + tag, t);
				free(t);
				if (end == NULL) {
					rc = err_set(err, EXIT_BAD_INPUT,
					    "unterminated dollar-quoted string "
					    "%.*s starting at line %d",
					    (int)(tag > 64 ? 64 : tag), s, line);
					break;
				}
				n = (size_t)(end - s) + tag;
				pgsql_buf_add(&cur.text, s, n);
				line += pgsql_lines(s, n);
				s += n;
				continue;
			}
		}
		if (c == ':' && s[1] == ':') {
			pgsql_buf_add(&cur.text, s, 2);
			s += 2;
			continue;
		}
		if (c == ':' && pgsql_word_start((unsigned char)s[1]) &&
		    (unsigned char)s[1] < 0x80) {
			for (n = 2; pgsql_name_char((unsigned char)s[n]); n++)
				;
			k = pgsql_name_index(&cur, s + 1, n - 1);
			snprintf(num, sizeof num, "$%zu", k);
			pgsql_buf_add(&cur.text, num, strlen(num));
			s += n;
			continue;
		}
		if (c == '(')
			cur.depth++;
		else if (c == ')' && cur.depth > 0)
			cur.depth--;
		pgsql_buf_add(&cur.text, s, 1);
		s++;
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
