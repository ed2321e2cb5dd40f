/*
 * suggest.h - "did you mean": the one place that decides which known name
 * a mistyped word was meant to be (configuration keys and names, and
 * backfillctl's commands, options and states).  Pure.
 */
#ifndef BACKFILLD_SUGGEST_H
#define BACKFILLD_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

/* Optimal string alignment distance (Levenshtein plus transpositions of
 * neighbours) between a and b; SIZE_MAX when either is over 64 bytes. */
size_t suggest_distance(const char *a, const char *b);

/* Is cand close enough to word to be suggested (at most a third of its
 * length in edits, 1 to 3), and closer than *best?  Lowers *best if so:
 * start with *best = SIZE_MAX and call it for each candidate. */
bool suggest_close(const char *word, const char *cand, size_t *best);

/* The name of names[] that word was meant to be: the one name it is a
 * prefix of, else the closest by suggest_close(); NULL when none. */
const char *suggest_closest(const char *word, const char *const *names,
			    size_t n);

#endif
