/*
 * config_cal.c - a job's calendar: timezone: (at the top level, the
 * jobs' default, and on a job: an IANA name of the system's tzdata, read
 * through tz.h, a misspelt one answered with the closest name of
 * tzdata.zi), week_start: (weekly jobs only), and the job's struct cal
 * built from them and its partition:.
 */
#include "config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suggest.h"
#include "tz.h"
#include "xalloc.h"

/* The calendar of a job as the state store records it (jobs.calendar,
 * docs/configuration.md "timezone"): "" for UTC with Monday weeks, else
 * its zone's name, followed by " sunday" for Sunday weeks. */
void
config_cal_name(const struct job_def *j, char *buf, size_t size)
{
	if (j->cal.tz == NULL && j->cal.week_start != WEEK_SUNDAY) {
		if (size > 0)
			buf[0] = '\0';
		return;
	}
	snprintf(buf, size, "%s%s", j->cal.tz != NULL ? tz_name(j->cal.tz) :
		 "UTC", j->cal.week_start == WEEK_SUNDAY ? " sunday" : "");
}

/* The names of tzdata.zi (its Z and L lines) into names[] (xmalloc'd,
 * pointing into *text); 0 names when the file cannot be read. */
static size_t
cfg_zone_names(char **text, const char ***names)
{
	const char *dir = getenv("TZDIR");
	char path[4096], why[128];
	size_t len, n = 0, cap = 0;
	char *line, *save = NULL;

	*names = NULL;
	if (dir == NULL || dir[0] == '\0')
		dir = "/usr/share/zoneinfo";
	snprintf(path, sizeof path, "%s/tzdata.zi", dir);
	if (cfg_read_file(path, 4 * 1024 * 1024, text, &len, why,
			  sizeof why) < 0) {
		*text = NULL;
		return 0;
	}
	for (line = strtok_r(*text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char *name;

		if ((line[0] != 'Z' && line[0] != 'L') || line[1] != ' ')
			continue;
		/* Z NAME ... ; L TARGET NAME */
		name = line + 2;
		if (line[0] == 'L' && (name = strchr(name, ' ')) != NULL)
			name++;
		if (name == NULL)
			continue;
		name[strcspn(name, " \t")] = '\0';
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			*names = xreallocarray(*names, cap, sizeof **names);
		}
		(*names)[n++] = name;
	}
	return n;
}

/* A zone that did not load: an unknown name with the closest known one,
 * or what was wrong with the zone's file. */
static int
cfg_zone_refuse(struct cfg_parser *p, yaml_node_t *val, const struct err *e)
{
	const char *name = cfg_text(val), **names, *best = NULL;
	char *text = NULL, buf[CFG_QUOTE_MAX * 4 + 16], sug[CFG_QUOTE_MAX * 4 + 16];
	size_t n = 0, i;
	bool known = false;
	struct err e2;
	int rc;

	/* a name of the wrong shape, or a zone whose file is bad: as said */
	if (tz_name_check(name, &e2) == 0)
		n = cfg_zone_names(&text, &names);
	else
		names = NULL;
	for (i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			known = true;
	if (n > 0 && !known)
		best = suggest_closest(name, names, n);
	if (n > 0 && !known)
		rc = cfg_fail(p, val->start_mark,
			      "%stimezone: unknown time zone %s; %s%s%s", p->pfx,
			      cfg_quote(name, buf, sizeof buf),
			      best != NULL ? "did you mean " :
			      "write an IANA name such as Europe/Berlin",
			      best != NULL ? cfg_quote(best, sug, sizeof sug) : "",
			      best != NULL ? "?" : "");
	else
		rc = cfg_fail(p, val->start_mark, "%stimezone: %s", p->pfx,
			      e->msg);
	free(names);
	free(text);
	return rc;
}

/* timezone: an IANA name into a struct tz * field (off), NULL for UTC;
 * off2, when not 0, is a bool field set to say it was written. */
int
cfg_h_timezone(struct cfg_parser *p, void *obj, const struct cfg_key *k,
	       yaml_node_t *key, yaml_node_t *val)
{
	struct tz **f = CFG_FIELD(obj, k->off, struct tz *);
	struct tz *z = NULL;
	struct err e = { 0 };

	(void)key;
	if (cfg_want_text(p, k, val) < 0)
		return -1;
	if (tz_load_calendar(cfg_text(val), &z, &e) < 0)
		return cfg_zone_refuse(p, val, &e);
	tz_unref(*f);
	*f = z;
	if (k->off2 != 0)
		*CFG_FIELD(obj, k->off2, bool) = true;
	return 0;
}

/* week_start: monday or sunday (the first day of a week partition). */
int
cfg_h_week_start(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		 yaml_node_t *key, yaml_node_t *val)
{
	struct job_def *j = obj;

	(void)key;
	if (cfg_want_plain(p, k, val) < 0)
		return -1;
	if (strcmp(cfg_text(val), "monday") == 0)
		j->cal.week_start = WEEK_MONDAY;
	else if (strcmp(cfg_text(val), "sunday") == 0)
		j->cal.week_start = WEEK_SUNDAY;
	else
		return cfg_bad_value(p, k, val);
	return 0;
}

/* The job's calendar, once its keys are read: its grain, week_start:
 * (weekly jobs only) and its zone (its own timezone:, else the top
 * level's). */
int
cfg_job_calendar(struct cfg_parser *p, struct job_def *j, yaml_node_t *map)
{
	yaml_node_t *k2 = cfg_map_key(p, map, "week_start");

	if (k2 != NULL && j->grain != GRAIN_WEEK)
		return cfg_fail(p, k2->start_mark,
				"%sweek_start is for partition: week; this"
				" job's partitions are %ss", p->pfx,
				grain_name(j->grain));
	if (j->cal.week_start != WEEK_SUNDAY)
		j->cal.week_start = WEEK_MONDAY;
	if (!j->zone_set && p->cfg->zone != NULL)
		j->zone = tz_ref(p->cfg->zone);
	j->cal.grain = j->grain;
	j->cal.tz = j->zone;
	return 0;
}
