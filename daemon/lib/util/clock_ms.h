/*
 * clock_ms.h - a clock in milliseconds: the one reading of a struct
 * timespec, shared by the wall clock (clock.c) and the warehouse drivers'
 * monotonic deadlines (wh_sqlite.c, wh_pg.c, in the backfilld-pg module,
 * hence inline).
 */
#ifndef BACKFILLD_CLOCK_MS_H
#define BACKFILLD_CLOCK_MS_H

#include <stdint.h>
#include <time.h>

/* Clock id (CLOCK_REALTIME, CLOCK_MONOTONIC) in milliseconds. */
static inline int64_t
clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
