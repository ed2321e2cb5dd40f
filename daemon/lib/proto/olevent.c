/*
 * olevent.c - OpenLineage run events as JSON text (see olevent.h).
 *
 * Built with jansson (object keys in insertion order, JSON_COMPACT): the
 * strings of the configuration and the errors of runs are escaped by
 * it.  Each facet carries _producer and _schemaURL, as the spec's
 * BaseFacet requires; the custom facet backfilld_partition points at
 * its schema as installed (OL_PARTITION_SCHEMA).
 */
#include "olevent.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "fnv.h"
#include "xalloc.h"

#define OL_FACETS "https://openlineage.io/spec/facets/"

const char *
ol_type_name(enum ol_type t)
{
	static const char *const names[] = { "START", "COMPLETE", "FAIL",
					     "ABORT" };

	return names[t];
}

/* An instant (ms) as ISO 8601 UTC with milliseconds and Z. */
static json_t *
ol_time(int64_t ms)
{
	char buf[40];

	cal_format_iso_ms(ms, buf);
	return json_string(buf);
}

/* A facet object with its _producer and _schemaURL. */
static json_t *
ol_facet(const char *schema)
{
	return json_pack("{s:s, s:s}", "_producer", OL_PRODUCER, "_schemaURL",
			 schema);
}

/* The run's facets: nominalTime, parent, backfilld_partition and, on a
 * FAIL with an error, errorMessage. */
static json_t *
ol_run_facets(const struct ol_run_facts *f)
{
	json_t *facets = json_object(), *nt, *bp;

	nt = ol_facet(OL_FACETS "1-0-1/NominalTimeRunFacet.json"
		      "#/$defs/NominalTimeRunFacet");
	json_object_set_new(nt, "nominalStartTime",
			    ol_time(f->nominal_start * 1000));
	json_object_set_new(nt, "nominalEndTime",
			    ol_time(f->nominal_end * 1000));
	json_object_set_new(facets, "nominalTime", nt);
	if (f->parent_run_id != NULL) {
		json_t *p = ol_facet(OL_FACETS "1-0-1/ParentRunFacet.json"
				     "#/$defs/ParentRunFacet");

		json_object_set_new(p, "run", json_pack("{s:s}", "runId",
							f->parent_run_id));
		json_object_set_new(p, "job", json_pack("{s:s, s:s}",
			"namespace", f->ns, "name", f->parent_job));
		json_object_set_new(facets, "parent", p);
	}
	bp = ol_facet(OL_PARTITION_SCHEMA);
	json_object_set_new(bp, "request", json_integer(f->request_id));
	json_object_set_new(bp, "requestKind", json_string(f->request_kind));
	json_object_set_new(bp, "partition", json_string(f->partition));
	json_object_set_new(bp, "attempt", json_integer(f->attempt));
	json_object_set_new(bp, "codeVersion", json_string(f->code_version));
	json_object_set_new(bp, "skipped", json_boolean(f->skipped));
	json_object_set_new(facets, "backfilld_partition", bp);
	if (f->type == OL_FAIL && f->error != NULL) {
		json_t *em = ol_facet(OL_FACETS "1-0-1/ErrorMessageRunFacet.json"
				      "#/$defs/ErrorMessageRunFacet");

		json_object_set_new(em, "message", json_string(f->error));
		json_object_set_new(em, "programmingLanguage",
				    json_string("SQL"));
		json_object_set_new(facets, "errorMessage", em);
	}
	return facets;
}

/* An array of datasets. */
static json_t *
ol_datasets(const struct ol_dataset *d, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s}", "namespace",
						   d[i].ns, "name", d[i].name));
	return a;
}

char *
ol_event_json(const struct ol_run_facts *f)
{
	json_t *ev = json_object(), *run;
	char *text, *out;

	json_object_set_new(ev, "eventType", json_string(ol_type_name(f->type)));
	json_object_set_new(ev, "eventTime", ol_time(f->event_ms));
	json_object_set_new(ev, "producer", json_string(OL_PRODUCER));
	json_object_set_new(ev, "schemaURL", json_string(OL_SCHEMA_URL));
	run = json_pack("{s:s}", "runId", f->run_id);
	json_object_set_new(run, "facets", ol_run_facets(f));
	json_object_set_new(ev, "run", run);
	json_object_set_new(ev, "job", json_pack("{s:s, s:s}", "namespace",
						 f->ns, "name", f->job));
	json_object_set_new(ev, "inputs", ol_datasets(f->inputs, f->ninputs));
	json_object_set_new(ev, "outputs",
			    ol_datasets(f->outputs, f->noutputs));
	text = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(ev);
	if (text == NULL)
		xalloc_exhausted("a lineage event");
	out = xstrdup(text);
	free(text);
	return out;
}

/* 16 bytes as the UUID text 8-4-4-4-12. */
static void
ol_uuid_text(const uint8_t b[16], char out[OL_UUID_LEN])
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[b[i] >> 4];
		out[o++] = hex[b[i] & 15];
	}
	out[o] = '\0';
}

void
ol_uuid_v4(const uint8_t rnd[16], char out[OL_UUID_LEN])
{
	uint8_t b[16];

	memcpy(b, rnd, 16);
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	ol_uuid_text(b, out);
}

void
ol_uuid_of(const char *text, char out[OL_UUID_LEN])
{
	uint64_t h1 = fnv1a64(FNV1A64_INIT, text, strlen(text));
	uint64_t h2 = fnv1a64(h1 ^ 0x9e3779b97f4a7c15ULL, text, strlen(text));
	uint8_t b[16];

	for (int i = 0; i < 8; i++) {
		b[i] = (uint8_t)(h1 >> (56 - 8 * i));
		b[8 + i] = (uint8_t)(h2 >> (56 - 8 * i));
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x80);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	ol_uuid_text(b, out);
}

/* The value of key `key` in a libpq key=value connection string, into
 * out (unquoted; empty when absent). */
static void
ol_conninfo_get(const char *ci, const char *key, char *out, size_t outsz)
{
	size_t kl = strlen(key);

	out[0] = '\0';
	for (const char *p = ci; *p;) {
		while (*p == ' ')
			p++;
		if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
			size_t n = 0;

			p += kl + 1;
			if (*p == '\'')
				p++;
			while (*p && *p != ' ' && *p != '\'' && n + 1 < outsz)
				out[n++] = *p++;
			out[n] = '\0';
			return;
		}
		while (*p && *p != ' ')
			p++;
	}
}

/* HOST:PORT of a URL's authority (scheme://[user@]host[:port]/...), with
 * def_port when it has none, into out; the part after it in *rest. */
static void
ol_url_authority(const char *url, const char *def_port, char *out,
		 size_t outsz, const char **rest)
{
	const char *a = strstr(url, "://"), *e, *at;
	int n;

	a = a != NULL ? a + 3 : url;
	e = a + strcspn(a, "/?#");
	at = memchr(a, '@', (size_t)(e - a));
	if (at != NULL)
		a = at + 1;
	n = (int)(e - a);
	if (memchr(a, ':', (size_t)n) != NULL || (n > 0 && a[n - 1] == ']'
		&& a[0] != '['))
		snprintf(out, outsz, "%.*s", n, a);
	else
		snprintf(out, outsz, "%.*s:%s", n, a, def_port);
	*rest = e;
}

/* postgres://HOST:PORT and DB.SCHEMA.TABLE of a libpq conninfo, either
 * form (key=value, or a postgres:// URI). */
static void
ol_pg_name(const char *ci, const char *table, struct ol_dataset *out)
{
	char host[256], port[16], db[128], auth[300];
	const char *rest;

	if (strncmp(ci, "postgres://", 11) == 0 ||
	    strncmp(ci, "postgresql://", 13) == 0) {
		ol_url_authority(ci, "5432", auth, sizeof auth, &rest);
		snprintf(db, sizeof db, "%.*s",
			 (int)strcspn(rest[0] == '/' ? rest + 1 : "", "?#"),
			 rest[0] == '/' ? rest + 1 : "");
	} else {
		ol_conninfo_get(ci, "host", host, sizeof host);
		ol_conninfo_get(ci, "port", port, sizeof port);
		ol_conninfo_get(ci, "dbname", db, sizeof db);
		/* a socket directory is a server of this host */
		snprintf(auth, sizeof auth, "%s:%s",
			 host[0] && host[0] != '/' ? host : "localhost",
			 port[0] ? port : "5432");
	}
	if (db[0] == '\0')
		snprintf(db, sizeof db, "postgres");
	snprintf(out->ns, sizeof out->ns, "postgres://%s", auth);
	if (strchr(table, '.') != NULL)
		snprintf(out->name, sizeof out->name, "%s.%s", db, table);
	else
		snprintf(out->name, sizeof out->name, "%s.public.%s", db, table);
}

void
ol_dataset_name(const struct warehouse_def *w, const char *table,
		struct ol_dataset *out)
{
	char auth[300];
	const char *rest, *dbp;

	switch (w->kind) {
	case WH_POSTGRES:
		ol_pg_name(w->conninfo, table, out);
		return;
	case WH_CLICKHOUSE:
		ol_url_authority(w->url, strncmp(w->url, "https:", 6) == 0 ?
				 "8443" : "8123", auth, sizeof auth, &rest);
		snprintf(out->ns, sizeof out->ns, "clickhouse://%s", auth);
		dbp = strstr(rest, "database=");
		if (strchr(table, '.') != NULL)
			snprintf(out->name, sizeof out->name, "%s", table);
		else if (dbp != NULL)
			snprintf(out->name, sizeof out->name, "%.*s.%s",
				 (int)strcspn(dbp + 9, "&#"), dbp + 9, table);
		else
			snprintf(out->name, sizeof out->name, "default.%s",
				 table);
		return;
	case WH_SQLITE:
	default:
		snprintf(out->ns, sizeof out->ns, "sqlite://%s", w->path);
		snprintf(out->name, sizeof out->name, "%s", table);
		return;
	}
}
