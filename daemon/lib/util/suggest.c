/*
 * suggest.c - "did you mean" (see suggest.h).
 */
#include "suggest.h"

#include <stdint.h>
#include <string.h>

#define SUGGEST_MAX 64

size_t
suggest_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];

	if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
		return SIZE_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t v = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

bool
suggest_close(const char *word, const char *cand, size_t *best)
{
	size_t d = suggest_distance(word, cand);
	size_t lim = strlen(cand) / 3;

	if (lim > 3)
		lim = 3;
	if (lim < 1)
		lim = 1;
	if (d > lim || d >= *best)
		return false;
	*best = d;
	return true;
}

const char *
suggest_closest(const char *word, const char *const *names, size_t n)
{
	const char *best = NULL, *prefix = NULL;
	size_t bestd = SIZE_MAX, nprefix = 0, len = strlen(word);

	for (size_t i = 0; i < n; i++) {
		if (len > 0 && strncmp(names[i], word, len) == 0) {
			prefix = names[i];
			nprefix++;
		}
	}
	if (nprefix == 1)
		return prefix;
	for (size_t i = 0; i < n; i++)
		if (suggest_close(word, names[i], &bestd))
			best = names[i];
	return best;
}
