/*
 * chstage.c - the engine of a ClickHouse job's stage table (chstage.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chstage.h"
#include "xalloc.h"

#define REPLICATED "Replicated"

/* The end of the quoted text at p (a single quote or backquote; a
 * backslash escapes the next byte, a doubled quote is one), NULL when it
 * does not end. */
static const char *
chstage_quoted(const char *p)
{
	char q = *p++;

	for (; *p != '\0'; p++) {
		if (*p == '\\' && p[1] != '\0')
			p++;
		else if (*p == q && p[1] == q)
			p++;
		else if (*p == q)
			return p + 1;
	}
	return NULL;
}

/* After a string literal argument at *p (spaces around it skipped) and
 * its following ',' or ')' (*sep): 0, -1 when there is none. */
static int
chstage_literal_arg(const char **p, char *sep)
{
	const char *q = *p;

	while (*q == ' ')
		q++;
	if (*q != '\'' || (q = chstage_quoted(q)) == NULL)
		return -1;
	while (*q == ' ')
		q++;
	if (*q != ',' && *q != ')')
		return -1;
	*sep = *q;
	*p = q + 1;
	return 0;
}

/* The ')' closing the argument list whose text starts at p, NULL when
 * there is none (quotes and nested parentheses skipped). */
static const char *
chstage_list_end(const char *p)
{
	int depth = 0;

	for (; *p != '\0'; p++) {
		if (*p == '\'' || *p == '`' || *p == '"') {
			if ((p = chstage_quoted(p)) == NULL)
				return NULL;
			p--;
		} else if (*p == '(') {
			depth++;
		} else if (*p == ')' && depth-- == 0) {
			return p;
		}
	}
	return NULL;
}

int
chstage_engine(const char *engine_full, char **out)
{
	const char *name, *p, *args, *end;
	size_t nlen;
	char sep;

	*out = NULL;
	if (strncmp(engine_full, REPLICATED, strlen(REPLICATED)) != 0)
		return 0;
	name = engine_full + strlen(REPLICATED);
	nlen = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
	if (nlen < strlen("MergeTree") ||
	    strncmp(name + nlen - 9, "MergeTree", 9) != 0)
		return -1;
	p = name + nlen;
	if (*p != '(') {
		/* no arguments: the server's default path and replica */
		*out = xasprintf("%.*s%s", (int)nlen, name, p);
		return 1;
	}
	p++;
	while (*p == ' ')
		p++;
	if (*p == ')') /* (): the defaults too */
		p++;
	else if (chstage_literal_arg(&p, &sep) == -1 || sep != ',' ||
	    chstage_literal_arg(&p, &sep) == -1)
		return -1;
	if (p[-1] == ')') {
		*out = xasprintf("%.*s%s", (int)nlen, name, p);
		return 1;
	}
	while (*p == ' ')
		p++;
	args = p;
	if ((end = chstage_list_end(args)) == NULL || end == args)
		return -1;
	*out = xasprintf("%.*s(%.*s)%s", (int)nlen, name, (int)(end - args),
			 args, end + 1);
	return 1;
}

char *
chstage_create(const char *stage, const char *live, const char *engine_full)
{
	char *engine, *sql;

	if (chstage_engine(engine_full, &engine) != 1)
		return NULL;
	sql = xasprintf("CREATE TABLE IF NOT EXISTS `%s` AS `%s` ENGINE = %s",
			stage, live, engine);
	free(engine);
	return sql;
}
