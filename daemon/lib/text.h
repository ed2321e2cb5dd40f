/*
 * text.h - rendering text that users typed, for errors and the log.
 *
 * A job name, a date, a reason or a command name comes from whoever runs
 * backfillctl; echoed raw, a newline in it would forge a log line and an
 * escape sequence would drive the reader's terminal.  text_escape() renders
 * it printable: \n, \r, \t, \\ and \xNN for the other control bytes and
 * DEL; bytes >= 0x80 (UTF-8) are kept.
 */
#ifndef BACKFILLD_TEXT_H
#define BACKFILLD_TEXT_H

#include <stddef.h>

/* Render s (NULL: "") into out (size >= 4), cut with "..." when it does
 * not fit; returns out. */
const char *text_escape(const char *s, char *out, size_t size);

/* FNV-1a of two strings with a separator between them (a job name and a
 * partition key, say): for hash tables keyed by the pair. */
unsigned text_hash_pair(const char *a, const char *b);

#endif
