/*
 * text.h - rendering outside text printable, for every output and the log.
 *
 * Text that comes from outside the daemon - a job name, a date, a reason
 * typed into backfillctl; an SQL error; a warehouse value quoted in a
 * check's failure; a hook's output - may hold any byte.  Echoed raw, a
 * newline in it would forge a line (of the log, of a table) and an escape
 * sequence would drive the reader's terminal.  The one rule, applied by
 * every text output, by the log and by the report (whose HTML escaping
 * comes after it):
 *
 *   \n, \r, \t               for newline, carriage return and tab;
 *   \xNN (two lower-case hex digits)
 *                            for every other byte 0x00-0x1f and for 0x7f;
 *   everything else kept     bytes >= 0x80 (UTF-8) and the backslash.
 *
 * Newline and tab are escaped too: every output that shows outside text
 * is a one-line field (a table cell, a log line's key=value).  The
 * backslash is not doubled, so the rendering is idempotent: text escaped
 * when it was recorded and again at the output comes out the same, and
 * the log can apply the rule to a whole line.  The rendering is for
 * reading; `--json` carries the exact text (JSON-escaped).
 */
#ifndef BACKFILLD_TEXT_H
#define BACKFILLD_TEXT_H

#include <stdbool.h>
#include <stddef.h>

struct buf;

/* Append the rendering of the len bytes at s (NUL bytes included, as
 * \x00) to b. */
void text_escape_add(struct buf *b, const void *s, size_t len);

/* The same rule for text of many lines (a command run's output, which
 * `backfillctl logs` prints): newline and tab are kept, since they lay out
 * lines and columns and move no cursor back; every other byte as above
 * (\r, \xNN for 0x00-0x1f and 0x7f: ESC, BEL, NUL, backspace never reach
 * a terminal raw).  Byte by byte, so text cut anywhere renders the same
 * in pieces as whole. */
void text_escape_lines(struct buf *b, const void *s, size_t len);

/* Append the rendering of the string s (NULL: nothing) to b. */
void text_escape_str(struct buf *b, const char *s);

/* Render s (NULL: "") into out (size >= 4), cut with "..." when it does
 * not fit; returns out.  For messages built in fixed buffers. */
const char *text_escape(const char *s, char *out, size_t size);

/* The rendering of one byte into e (room for 5: 4 and a NUL): the byte
 * itself, or its escape; returns its length (1, 2 or 4).  For renderers
 * with quoting of their own (a value quoted in a message). */
size_t text_escape_byte(unsigned char c, char *e);

/* Whether the len bytes at s need no escaping (no control byte). */
bool text_is_clean(const void *s, size_t len);

/* v as %.15g, %.16g or %.17g, the first that reads back as v (0.9, not
 * 0.90000000000000002; 0.30000000000000004 stays), into out (size >= 32);
 * returns out. */
const char *text_double(double v, char *out, size_t size);

/* A figure for people (an audit's metric): an integral v (|v| < 2^53) as
 * an integer, 3348168 (money in integer cents has no ".00"), any other
 * as %.2f, 1.50; into out (size >= 32); returns out. */
const char *text_figure(double v, char *out, size_t size);

/* FNV-1a of two strings with a separator between them (a job name and a
 * partition key, say): for hash tables keyed by the pair. */
unsigned text_hash_pair(const char *a, const char *b);

#endif
