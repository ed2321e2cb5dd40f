/*
 * startup.h - the daemon's checks before its loop runs (startup.c).
 */
#ifndef BACKFILLD_STARTUP_H
#define BACKFILLD_STARTUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

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
/* A job whose calendar (timezone:, week_start:) differs from the one its
 * built partitions are keyed in (jobs.calendar): refused, naming both.
 * A store that cannot be read is logged and passes (checked next time). */
int startup_check_calendars(struct store *st, const struct config *cfg,
			    struct err *err);
/* Record each job's calendar where the store's differs. */
int startup_save_calendars(struct store *st, const struct config *cfg,
			   int64_t at, struct err *err);
/* Raise the soft descriptor limit to the hard one. */
void startup_raise_nofile(void);

#endif
