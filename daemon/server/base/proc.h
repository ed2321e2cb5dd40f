/*
 * proc.h - process groups a crashed daemon left behind.
 *
 * A command run is spawned in its own session, so its pid is also its
 * process group.  The store records that pgid and the leader's start time
 * (/proc/PID/stat field 22: clock ticks since boot) as soon as the run is
 * spawned.  After a crash (kill -9, OOM) the group lives on, reparented
 * to init; at the next start, before the run's partition is queued again,
 * proc_end_groups() ends it: SIGTERM to the group, SIGKILL to what is left
 * after a short wait.  A pid is reused after its process is gone, so a
 * group is ended only while /proc/PGID/stat shows the start time recorded:
 * a different start time is another program that happens to have the pid
 * now, and is never touched.  Linux only (/proc).
 */
#ifndef BACKFILLD_PROC_H
#define BACKFILLD_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The start time of process pid in clock ticks since boot: 0, or -1 when
 * it does not exist (or /proc cannot say). */
int proc_start_time(pid_t pid, int64_t *ticks);

/* A group to end: filled by the caller; `ended` and `killed` by
 * proc_end_groups. */
struct proc_group {
	pid_t pgid;
	int64_t start;     /* the leader's start time recorded */
	bool matched;      /* the leader was still the process we spawned */
	bool killed;       /* it needed SIGKILL */
	bool survived;     /* still there when the wait ran out */
};

/* End the groups whose leader still has the start time recorded: SIGTERM,
 * then SIGKILL after term_ms, then wait up to kill_ms more.  Blocks for at
 * most term_ms + kill_ms (start-up only). */
void proc_end_groups(struct proc_group *g, size_t n, int term_ms, int kill_ms);

/*
 * The groups whose leader carries the environment entry `marker` (exactly
 * "NAME=VALUE"): every command run gets BACKFILLD_INSTANCE=<the daemon's
 * command log folder>, which names its state store, in its environment
 * before it starts, so the groups a crashed daemon left are found even
 * when the daemon died before it could record their pgid (spawned, then
 * killed before the turn's commit).  Fills *out (malloc'd, start times
 * read now) and *n; -1 when /proc cannot be read.
 */
int proc_find_marked(const char *marker, struct proc_group **out, size_t *n);

/*
 * Descriptors (docs/several-hosts.md, "Descriptors"): every descriptor
 * the daemon holds is close-on-exec.  The daemon's own are opened so;
 * proc_cloexec_all() makes sure of every one above 2 but `keep` (-1:
 * none) just before each spawn, so that one a library opened without the
 * flag (libpq's cancel request, on an executor thread) is not inherited;
 * proc_close_strays() closes those above 2 but `keep` at the start of an
 * image that restarted in place, which a thread of the image before may
 * have opened while it exec'd.
 */
void proc_cloexec_all(int keep);
void proc_close_strays(int keep);
/* How many more descriptors this process may open now (its soft
 * RLIMIT_NOFILE less those open), or -1 when it cannot tell. */
int proc_fd_free(void);

#endif
