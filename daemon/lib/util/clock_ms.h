/*
 * clock_ms.h - the one reading of the system's clocks (UTIL-2): every
 * clock_gettime of the daemon and backfillctl is here (tools/
 * check_layout.py fails on one elsewhere, and on time() and
 * gettimeofday()).  The daemon's wall clock, with the test clock, is
 * clock.h's over it (server/base/clock.c); the layers below the server
 * read these directly: the warehouse drivers' monotonic deadlines
 * (wh_sqlite.c, wh_pg.c, wh_ch.c), the cluster's (cluster_pg_conn.c),
 * log lines' time (log.c), sd_notify's MONOTONIC_USEC (notify.c).  Inline:
 * the backfilld-pg and backfilld-ch modules use it too.
 */
#ifndef BACKFILLD_CLOCK_MS_H
#define BACKFILLD_CLOCK_MS_H

#include <stdint.h>
#include <time.h>

/* Clock id (CLOCK_REALTIME, CLOCK_MONOTONIC) now. */
static inline struct timespec
clock_read(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts;
}

/* Clock id in milliseconds. */
static inline int64_t
clock_ms(clockid_t id)
{
	struct timespec ts = clock_read(id);

	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Clock id in microseconds. */
static inline uint64_t
clock_us(clockid_t id)
{
	struct timespec ts = clock_read(id);

	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
}

#endif
