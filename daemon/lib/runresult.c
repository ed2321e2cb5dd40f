/*
 * runresult.c - the result line of a run on another node (runresult.h).
 */
#include "runresult.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
runresult_format(const struct runresult *r, char *buf, size_t len)
{
	snprintf(buf, len, "timed_out=%d not_started=%d rows_changed=%" PRId64,
		 r->timed_out ? 1 : 0, r->not_started ? 1 : 0, r->rows_changed);
	if (r->committed_before)
		snprintf(buf + strlen(buf), len - strlen(buf),
			 " committed_before=1");
}

/* One field: key=value with an integer value. */
static int
runresult_field(const char *f, size_t n, struct runresult *r)
{
	char tmp[64], *eq, *end;
	long long v;

	if (n >= sizeof tmp)
		return -1;
	memcpy(tmp, f, n);
	tmp[n] = '\0';
	if ((eq = strchr(tmp, '=')) == NULL || eq[1] == '\0')
		return -1;
	*eq = '\0';
	errno = 0;
	v = strtoll(eq + 1, &end, 10);
	if (*end != '\0' || errno != 0)
		return -1;
	if (strcmp(tmp, "timed_out") == 0)
		r->timed_out = v != 0;
	else if (strcmp(tmp, "not_started") == 0)
		r->not_started = v != 0;
	else if (strcmp(tmp, "rows_changed") == 0)
		r->rows_changed = v < 0 ? -1 : v;
	else if (strcmp(tmp, "committed_before") == 0)
		r->committed_before = v != 0;
	return 0;
}

int
runresult_parse(const char *line, struct runresult *r)
{
	int rc = 0;

	r->timed_out = r->not_started = r->committed_before = false;
	r->rows_changed = -1;
	while (line != NULL && *line != '\0') {
		size_t n;

		line += strspn(line, " ");
		n = strcspn(line, " ");
		if (n > 0 && runresult_field(line, n, r) < 0)
			rc = -1;
		line += n;
	}
	return rc;
}
