/*
 * startup.h - the daemon's checks before its loop runs (startup.c).
 */
#ifndef BACKFILLD_STARTUP_H
#define BACKFILLD_STARTUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "err.h"

struct config;
struct store;

/* mkdir -p: 0, or -1 with errno. */
int startup_mkdir_p(const char *path, mode_t mode);
/* Take STATE_DB.lock (LOGDIR.lock on several hosts: cluster true), its
 * descriptor into *lock_fd, held for the process's life. */
int startup_lock_store(const char *state_db, bool cluster, int *lock_fd,
		       struct err *err);
/* state_db not a symbolic link, socket_group exists. */
int startup_check_host(const struct config *cfg, struct err *err);
/* Log the bounds that are allowed but unwise. */
void startup_check_bound(const struct config *cfg, char *const *locals);
/* Every warehouse's driver can be loaded. */
int startup_check_warehouses(const struct config *cfg, struct err *err);
/* What startup_check_calendars read of each job's row (jobs.calendar),
 * so that startup_save_calendars reads none again; kept by the daemon
 * from one check to the next (a check frees the one before). */
struct startup_cals {
	bool read;   /* false: the store could not be read */
	size_t n;    /* cfg->njobs */
	char (*had)[CONFIG_CAL_NAME_MAX]; /* the recorded calendar, by job */
};
/* A job whose calendar (timezone:, week_start:) differs from the one its
 * built partitions are keyed in (jobs.calendar): refused, naming both
 * (cals freed).  A store that cannot be read is logged and passes
 * (checked next time, cals->read false).  Each job's row read once, into
 * cals. */
int startup_check_calendars(struct store *st, const struct config *cfg,
			    struct startup_cals *cals, struct err *err);
/* Record each job's calendar (at the clock's now) where the row cals
 * read differs; nothing when the check could not read the store. */
int startup_save_calendars(struct store *st, const struct config *cfg,
			   const struct startup_cals *cals, struct err *err);
void startup_cals_free(struct startup_cals *cals);
/* Raise the soft descriptor limit to the hard one. */
void startup_raise_nofile(void);

#endif
