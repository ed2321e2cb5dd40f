/*
 * chparts.c - the partitions of a compound partition key (chparts.h).
 */
#include "chparts.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "chsql.h"
#include "xalloc.h"

bool
chparts_first(const char *key, char *first, size_t sz)
{
	const char *p = key, *start, *end = NULL;
	int depth = 0;
	char quote = 0;
	bool comma = false;
	size_t n;

	while (isspace((unsigned char)*p))
		p++;
	if (strncasecmp(p, "tuple", 5) == 0)
		p += 5;
	while (isspace((unsigned char)*p))
		p++;
	if (*p++ != '(')
		return false;
	start = p;
	for (; *p != '\0'; p++) {
		if (quote) {
			if (*p == '\\' && p[1] != '\0')
				p++;
			else if (*p == quote)
				quote = 0;
		} else if (*p == '\'' || *p == '`' || *p == '"') {
			quote = *p;
		} else if (*p == '(') {
			depth++;
		} else if (*p == ')' && depth-- == 0) {
			break;
		} else if (*p == ',' && depth == 0 && end == NULL) {
			end = p;
			comma = true;
		}
	}
	if (!comma || *p != ')')
		return false;
	/* nothing but blanks after the tuple's ')' */
	for (const char *q = p + 1; *q != '\0'; q++)
		if (!isspace((unsigned char)*q))
			return false;
	while (start < end && isspace((unsigned char)*start))
		start++;
	while (end > start && isspace((unsigned char)end[-1]))
		end--;
	n = (size_t)(end - start);
	if (n == 0 || n >= sz)
		return false;
	memcpy(first, start, n);
	first[n] = '\0';
	return true;
}

/* The plain literals of keys[0..n) into txt, all of one length (*len,
 * without the quotes). */
static int
chparts_texts(const char *const *keys, size_t n,
	      char (*txt)[CHSQL_LITERAL_MAX], size_t *len, struct err *err)
{
	*len = 0;
	if (n == 0)
		return err_set(err, EXIT_BAD_INPUT, "no partition");
	for (size_t i = 0; i < n; i++) {
		if (chsql_plain(keys[i], txt[i], err) == -1)
			return -1;
		if (i > 0 && strlen(txt[i]) != *len + 2)
			return err_set(err, EXIT_BAD_INPUT, "refused: the"
				       " partitions %s and %s are of two grains",
				       keys[0], keys[i]);
		*len = strlen(txt[i]) - 2;
	}
	return 0;
}

int
chparts_ids_sql(const char *stage, const char *live, const char *const *keys,
		size_t n, char **out, struct err *err)
{
	char (*txt)[CHSQL_LITERAL_MAX] = xcalloc(n ? n : 1, sizeof *txt);
	struct buf b;
	size_t len;

	*out = NULL;
	if (chparts_texts(keys, n, txt, &len, err) == -1) {
		free(txt);
		return -1;
	}
	buf_init(&b);
	/* the tuple's text "('K',...)": K from its third byte, then "'," */
	buf_printf(&b, "SELECT DISTINCT concat(substring(partition, 3, %zu),"
		   " '\\t', if(table = '%s', 's', 'l'), '\\t', partition_id)"
		   " AS v FROM system.parts WHERE database = currentDatabase() AND"
		   " active AND table IN ('%s'", len, stage, stage);
	if (live != NULL)
		buf_printf(&b, ", '%s'", live);
	buf_printf(&b, ") AND substring(partition, %zu, 2) = ''',' AND"
		   " substring(partition, 3, %zu) IN (", len + 3, len);
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s%s", i ? ", " : "", txt[i]);
	buf_addstr(&b, ")");
	buf_add(&b, "", 1);
	free(txt);
	*out = buf_steal(&b);
	return 0;
}

/* Whether id is a partition id the daemon may quote: [0-9A-Za-z_-]. */
static bool
chparts_id_ok(const char *id)
{
	size_t n = strlen(id);

	return n > 0 && n < CHPARTS_ID_MAX &&
	       strspn(id, "0123456789abcdefghijklmnopqrstuvwxyz"
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZ_-") == n;
}

static void
chparts_push(char ***ids, size_t *n, const char *id)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*ids)[i], id) == 0)
			return;
	*ids = xreallocarray(*ids, *n + 1, sizeof **ids);
	(*ids)[(*n)++] = xstrdup(id);
}

int
chparts_add(struct chparts *p, bool stage, const char *id)
{
	if (!chparts_id_ok(id))
		return -1;
	if (stage)
		chparts_push(&p->stage, &p->nstage, id);
	else
		chparts_push(&p->live, &p->nlive, id);
	return 0;
}

/* One value "KEY\tW\tID" into p; -1 when it is not of that form. */
static int
chparts_value(char (*txt)[CHSQL_LITERAL_MAX], size_t n, const char *v,
	      struct chparts *p)
{
	const char *t1 = strchr(v, '\t'), *t2;
	size_t klen;

	if (t1 == NULL || (t2 = strchr(t1 + 1, '\t')) == NULL ||
	    t2 != t1 + 2 || (t1[1] != 's' && t1[1] != 'l') ||
	    !chparts_id_ok(t2 + 1))
		return -1;
	klen = (size_t)(t1 - v);
	for (size_t i = 0; i < n; i++) {
		if (strlen(txt[i]) != klen + 2 ||
		    strncmp(txt[i] + 1, v, klen) != 0)
			continue;
		if (t1[1] == 's')
			chparts_push(&p[i].stage, &p[i].nstage, t2 + 1);
		else
			chparts_push(&p[i].live, &p[i].nlive, t2 + 1);
		return 0;
	}
	return -1;
}

int
chparts_parse(const char *const *keys, size_t n, char *const *values,
	      size_t nvalues, struct chparts *p, struct err *err)
{
	char (*txt)[CHSQL_LITERAL_MAX] = xcalloc(n ? n : 1, sizeof *txt);
	size_t len;
	int rc;

	memset(p, 0, n * sizeof *p);
	rc = chparts_texts(keys, n, txt, &len, err);
	for (size_t i = 0; i < nvalues && rc == 0; i++)
		if (chparts_value(txt, n, values[i], p) == -1)
			rc = err_set(err, EXIT_WORK_FAILED, "unexpected partition"
				     " %.80s in system.parts", values[i]);
	free(txt);
	if (rc == -1)
		chparts_free(p, n);
	return rc;
}

void
chparts_free(struct chparts *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < p[i].nstage; k++)
			free(p[i].stage[k]);
		for (size_t k = 0; k < p[i].nlive; k++)
			free(p[i].live[k]);
		free(p[i].stage);
		free(p[i].live);
		memset(&p[i], 0, sizeof p[i]);
	}
}

/* Whether id is one of p's stage ids. */
static bool
chparts_staged(const struct chparts *p, const char *id)
{
	for (size_t k = 0; k < p->nstage; k++)
		if (strcmp(p->stage[k], id) == 0)
			return true;
	return false;
}

void
chparts_publish_sql(const char *live, const char *stage,
		    const struct chparts *p, size_t n, char **out)
{
	struct buf b;
	size_t m = 0;

	buf_init(&b);
	buf_printf(&b, "ALTER TABLE `%s`", live);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < p[i].nstage; k++)
			buf_printf(&b, "%s REPLACE PARTITION ID '%s' FROM `%s`",
				   m++ ? "," : "", p[i].stage[k], stage);
		for (size_t k = 0; k < p[i].nlive; k++)
			if (!chparts_staged(&p[i], p[i].live[k]))
				buf_printf(&b, "%s DROP PARTITION ID '%s'",
					   m++ ? "," : "", p[i].live[k]);
	}
	buf_add(&b, "", 1);
	*out = m > 0 ? buf_steal(&b) : NULL;
	buf_free(&b);
}

void
chparts_drop_sql(const char *table, const struct chparts *p, size_t n,
		 char **out)
{
	struct buf b;
	size_t m = 0;

	buf_init(&b);
	buf_printf(&b, "ALTER TABLE `%s`", table);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < p[i].nstage; k++)
			buf_printf(&b, "%s DROP PARTITION ID '%s'",
				   m++ ? "," : "", p[i].stage[k]);
	buf_add(&b, "", 1);
	*out = m > 0 ? buf_steal(&b) : NULL;
	buf_free(&b);
}

char *
chparts_wait_sql(const char *table)
{
	return xasprintf("ALTER TABLE `%s` DROP PARTITION ID 'backfilld_none'",
			 table);
}
