/*
 * plan_fixture.h - what the planning tests (test_plan.c, test_cascade.c,
 * test_plan_open.c) share: a configuration loaded from YAML text, a day
 * number from its date, and a plan item written "job key".
 */
#ifndef BACKFILLD_PLAN_FIXTURE_H
#define BACKFILLD_PLAN_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "calendar.h"
#include "config.h"
#include "plan.h"

/* The configuration of yaml, read as if from path; the test stops when it
 * is refused. */
static inline struct config *
fixture_config(const char *path, const char *yaml)
{
	struct config *c = NULL;
	struct err err;

	if (config_load_string(path, yaml, strlen(yaml), &c, &err) < 0)
		ck_abort_msg("config: %s", err.msg);
	return c;
}

/* Day number of a date "YYYY-MM-DD". */
static inline part_t
day_of(const char *s)
{
	int64_t d;

	ck_assert_int_eq(cal_parse_date(s, &d, NULL), 0);
	return d;
}

/* Plan item i as "job key" into buf. */
static inline const char *
fixture_item(const struct config *c, const struct plan *p, size_t i,
	     char *buf, size_t len)
{
	const struct job_def *j = &c->jobs[p->items[i].job];
	char key[CAL_KEY_MAX];

	cal_key(job_cal(j), p->items[i].part, key);
	snprintf(buf, len, "%s %s", j->name, key);
	return buf;
}

#endif
