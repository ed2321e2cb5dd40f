/*
 * json.h - writing JSON values into a struct buf (pure).
 *
 * The daemon renders every --json answer, the audit columns and the
 * report's data with these; objects and arrays are written by hand around
 * them.  Every function appends exactly one JSON value.
 */
#ifndef BACKFILLD_JSON_H
#define BACKFILLD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* s as a JSON string literal (quotes, escapes; bytes that are not valid
 * UTF-8 become U+FFFD), or null when s is NULL. */
void json_str(struct buf *b, const char *s);
/* An array of n strings. */
void json_strv(struct buf *b, char *const *v, size_t n);
/* An array of n names that need no escaping (config keys). */
void json_keys(struct buf *b, const char *const *k, size_t n);

#endif
