/*
 * mstate.c - the names of the manifest states (mstate.h), the one table
 * of them: the stores, the commands and `runs --state` all read it.
 */
#include "mstate.h"

#include <stddef.h>
#include <string.h>

const char *const mstate_names[MS_COUNT + 1] = {
	"queued", "running", "succeeded", "failed", "blocked", "cancelled",
	"skipped",
	NULL
};

/* Name of a manifest state. */
const char *
mstate_name(enum mstate s)
{
	return (unsigned)s < MS_COUNT ? mstate_names[s] : "unknown";
}

/* Parse a manifest state name (NULL: none): 0, or -1 when unknown. */
int
mstate_parse(const char *s, enum mstate *out)
{
	for (int i = 0; s != NULL && i < MS_COUNT; i++) {
		if (strcmp(s, mstate_names[i]) == 0) {
			*out = (enum mstate)i;
			return 0;
		}
	}
	return -1;
}
