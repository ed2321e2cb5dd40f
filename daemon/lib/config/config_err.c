/*
 * config_err.c - errors and their positions: every message of the load is
 * one line "FILE:LINE:COLUMN: message" (libyaml marks are 0-based: we add
 * 1), with the context it is about ("job \"x\": ") and user text quoted and
 * escaped; the positions inside a scalar (an SQL statement's byte) and
 * libyaml's own syntax errors.  The first error stops the load.
 */
#include "config_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "suggest.h"
#include "text.h"
#include "xalloc.h"

/* Quote user text for a message: "...", escaped, one line, truncated. */
const char *
cfg_quote(const char *s, char *buf, size_t n)
{
	return cfg_quote_n(s, strlen(s), buf, n);
}

/* cfg_quote of the len bytes at s, NUL bytes included (as \x00). */
const char *
cfg_quote_n(const char *s, size_t len, char *buf, size_t n)
{
	size_t o = 0, i;

	if (n < 8)
		return "";
	buf[o++] = '"';
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (o + 8 >= n || i >= CFG_QUOTE_MAX) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += text_escape_byte(c, buf + o); /* the one rule */
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/* Fail the load: "FILE:LINE:COL: message", 1-based position. */
static int
cfg_vfail_at(struct cfg_parser *p, int line, int col, const char *fmt,
	     va_list ap)
{
	char msg[ERR_MSG_MAX];
	char *c;

	vsnprintf(msg, sizeof msg, fmt, ap);
	for (c = msg; *c != '\0'; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	return err_set(p->err, EXIT_BAD_INPUT, "%s:%d:%d: %s", p->file, line,
		       col, msg);
}

/* Fail the load at a 1-based line and column. */
int __attribute__((format(printf, 4, 5)))
cfg_fail_at(struct cfg_parser *p, int line, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_vfail_at(p, line, col, fmt, ap);
	va_end(ap);
	return -1;
}

/* Fail the load at a libyaml mark (0-based). */
int __attribute__((format(printf, 3, 4)))
cfg_fail(struct cfg_parser *p, yaml_mark_t m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_vfail_at(p, (int)m.line + 1, (int)m.column + 1, fmt, ap);
	va_end(ap);
	return -1;
}

/* Set the message context ("job \"x\"") and its prefix ("job \"x\": "). */
void __attribute__((format(printf, 2, 3)))
cfg_set_ctx(struct cfg_parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->ctx, sizeof p->ctx, fmt, ap);
	va_end(ap);
	if (p->ctx[0] != '\0')
		snprintf(p->pfx, sizeof p->pfx, "%s: ", p->ctx);
	else
		p->pfx[0] = '\0';
}

/* Restore a context saved from p->ctx. */
void
cfg_restore_ctx(struct cfg_parser *p, const char *saved)
{
	cfg_set_ctx(p, "%s", saved);
}

/* Describe what a node holds, for "got ..." in messages. */
const char *
cfg_got(const yaml_node_t *n, char *buf, size_t len)
{
	switch (n->type) {
	case YAML_SEQUENCE_NODE:
		return n->data.sequence.items.top == n->data.sequence.items.start ?
			       "an empty sequence" : "a sequence";
	case YAML_MAPPING_NODE:
		return n->data.mapping.pairs.top == n->data.mapping.pairs.start ?
			       "an empty mapping" : "a mapping";
	case YAML_SCALAR_NODE:
		if (cfg_is_null(n))
			return "nothing";
		return cfg_quote(cfg_text(n), buf, len);
	default:
		return "nothing";
	}
}

/* Refuse a value of the wrong shape: "KEY must be WHAT, got ...". */
int
cfg_bad_value(struct cfg_parser *p, const struct cfg_key *k, yaml_node_t *val)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];

	const char *t = val->type == YAML_SCALAR_NODE ? cfg_text(val) : "";

	t += *t == '-' || *t == '+';
	/* 0x10, 0o10, 010: YAML 1.1 or strtod would read another number */
	if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X' || t[1] == 'o' ||
			    t[1] == 'O' || (t[1] >= '0' && t[1] <= '9')))
		return cfg_fail(p, val->start_mark, "%s%s must be %s, got %s:"
				" write numbers in decimal (16, not 0x10 or"
				" 020)", p->pfx, k->name, k->what,
				cfg_got(val, buf, sizeof buf));
	return cfg_fail(p, val->start_mark, "%s%s must be %s, got %s", p->pfx,
			k->name, k->what, cfg_got(val, buf, sizeof buf));
}

/* Refuse an unknown key, suggesting the closest valid one. */
int
cfg_unknown_key(struct cfg_parser *p, yaml_node_t *kn,
		const struct cfg_key *table)
{
	const char *word = cfg_text(kn), *sugg = NULL;
	size_t best = SIZE_MAX;
	char buf[CFG_QUOTE_MAX * 4 + 16], where[CFG_CTX_MAX + 8];

	for (; table->name != NULL; table++)
		if (suggest_close(word, table->name, &best))
			sugg = table->name;
	if (p->ctx[0] != '\0')
		snprintf(where, sizeof where, "in %s", p->ctx);
	else
		snprintf(where, sizeof where, "at the top level");
	if (sugg != NULL)
		return cfg_fail(p, kn->start_mark,
				"unknown key %s %s; did you mean \"%s\"?",
				cfg_quote(word, buf, sizeof buf), where, sugg);
	return cfg_fail(p, kn->start_mark, "unknown key %s %s",
			cfg_quote(word, buf, sizeof buf), where);
}

/* 1-based line and column of byte `off` of a text. */
void
cfg_text_pos(const char *text, size_t off, int *line, int *col)
{
	size_t i, ls = 0;

	*line = 1;
	for (i = 0; i < off && text[i] != '\0'; i++)
		if (text[i] == '\n') {
			(*line)++;
			ls = i + 1;
		}
	*col = (int)(off - ls) + 1;
}

/* Byte range [*s, *e) of 0-based line `line` of the source, without its
 * line break; false when there is no such line. */
bool
cfg_src_line(struct cfg_parser *p, size_t line, size_t *s, size_t *e)
{
	size_t i = 0, l = 0;

	while (l < line) {
		const char *nl = memchr(p->src + i, '\n', p->srclen - i);

		if (nl == NULL)
			return false;
		i = (size_t)(nl - p->src) + 1;
		l++;
	}
	*s = i;
	while (i < p->srclen && p->src[i] != '\n')
		i++;
	if (i > *s && p->src[i - 1] == '\r')
		i--;
	*e = i;
	return true;
}

/* 1-based file position of byte `off` of scalar node n's value: exact for a
 * literal block (|) or a one-line plain or quoted scalar whose source text
 * matches; the node's own position otherwise. */
void
cfg_scalar_pos(struct cfg_parser *p, const yaml_node_t *n, size_t off,
	       int *line, int *col)
{
	const char *v = cfg_text(n);
	size_t s, e, i, ls = 0, li = 0, vlen;

	*line = (int)n->start_mark.line + 1;
	*col = (int)n->start_mark.column + 1;
	for (i = 0; i < off; i++)
		if (v[i] == '\n') {
			li++;
			ls = i + 1;
		}
	if (n->data.scalar.style == YAML_LITERAL_SCALAR_STYLE) {
		size_t indent;

		vlen = strcspn(v + ls, "\n");
		if (!cfg_src_line(p, n->start_mark.line + 1 + li, &s, &e) ||
		    e - s < vlen)
			return;
		indent = e - s - vlen;
		for (i = 0; i < indent; i++)
			if (p->src[s + i] != ' ')
				return;
		if (memcmp(p->src + s + indent, v + ls, vlen) != 0)
			return;
		*line = (int)(n->start_mark.line + 1 + li) + 1;
		*col = (int)(indent + off - ls) + 1;
		return;
	}
	if (li == 0 && n->data.scalar.style != YAML_FOLDED_SCALAR_STYLE) {
		size_t q = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? 0 : 1;
		size_t want = off + 1;

		if (!cfg_src_line(p, n->start_mark.line, &s, &e))
			return;
		s += n->start_mark.column + q;
		if (s + want > e || memcmp(p->src + s, v, want) != 0)
			return;
		*col = (int)(n->start_mark.column + q + off) + 1;
	}
}

/* Turn a libyaml parser error into "FILE:LINE:COL: invalid YAML: ...". */
int
cfg_yaml_error(struct cfg_parser *p, const yaml_parser_t *yp)
{
	int line = (int)yp->problem_mark.line + 1;
	int col = (int)yp->problem_mark.column + 1;
	char ctx[128] = "";

	if (yp->error == YAML_MEMORY_ERROR)
		xalloc_exhausted("libyaml");
	if (yp->error == YAML_READER_ERROR) {
		cfg_text_pos(p->src, yp->problem_offset < p->srclen ?
					     yp->problem_offset : p->srclen,
			     &line, &col);
		return cfg_fail_at(p, line, col, "invalid YAML: %s",
				   yp->problem ? yp->problem : "unreadable input");
	}
	if (yp->context != NULL)
		snprintf(ctx, sizeof ctx, " (%s at line %zu)", yp->context,
			 yp->context_mark.line + 1);
	return cfg_fail_at(p, line, col, "invalid YAML: %s%s",
			   yp->problem ? yp->problem : "syntax error", ctx);
}
