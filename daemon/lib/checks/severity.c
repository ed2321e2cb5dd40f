/*
 * severity.c - the decision a check's severity makes (severity.h).
 */
#include "severity.h"

#include <string.h>

int
severity_parse(const char *s, bool *warn)
{
	if (strcmp(s, "error") == 0)
		*warn = false;
	else if (strcmp(s, "warn") == 0)
		*warn = true;
	else
		return -1;
	return 0;
}

const char *
severity_result(bool passed, bool warn)
{
	if (passed)
		return "passed";
	return warn ? "warned" : "failed";
}

bool
severity_fails_run(bool passed, bool warn)
{
	return !passed && !warn;
}

bool
severity_is_note(const char *error)
{
	return error != NULL &&
	    strncmp(error, SEVERITY_NOTE, strlen(SEVERITY_NOTE)) == 0;
}
