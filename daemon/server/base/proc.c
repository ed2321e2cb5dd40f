/* proc.c - process groups a crashed daemon left behind (Linux /proc). */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/close_range.h>
#endif

#include "xalloc.h"

/* Read /proc/PID/stat: the state letter, the process group and the start
 * time.  0, or -1 when the process is gone. */
static int
proc_stat(pid_t pid, char *state, pid_t *pgrp, int64_t *start)
{
	char path[64], buf[1024], *p;
	long long v;
	size_t n;
	FILE *f;
	int field;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the name (field 2) may hold spaces and parentheses: skip to the
	 * last ')' */
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return -1;
	p += 2;
	/* p is at field 3 (state) */
	*state = *p;
	for (field = 3; field < 22 && p != NULL; field++) {
		if (field == 5 && pgrp != NULL)
			*pgrp = (pid_t)strtol(p, NULL, 10);
		p = strchr(p, ' ');
		if (p != NULL)
			p++;
	}
	if (p == NULL || sscanf(p, "%lld", &v) != 1)
		return -1;
	*start = v;
	return 0;
}

int
proc_start_time(pid_t pid, int64_t *ticks)
{
	char state;

	return proc_stat(pid, &state, NULL, ticks);
}

/* Whether any live (not zombie) process is in group pgid. */
static bool
proc_group_alive(pid_t pgid)
{
	struct dirent *de;
	bool alive = false;
	DIR *dir;

	dir = opendir("/proc");
	if (dir == NULL)
		return kill(-pgid, 0) == 0;
	while (!alive && (de = readdir(dir)) != NULL) {
		char state, *end;
		pid_t pgrp = 0;
		int64_t start;
		long pid = strtol(de->d_name, &end, 10);

		if (*end != '\0' || pid <= 0)
			continue;
		if (proc_stat((pid_t)pid, &state, &pgrp, &start) == 0 &&
		    pgrp == pgid && state != 'Z' && state != 'X')
			alive = true;
	}
	closedir(dir);
	return alive;
}

/* Wait up to ms for the groups marked to end; true when all are gone. */
static bool
proc_wait_groups(struct proc_group *g, size_t n, int ms)
{
	struct timespec step = { 0, 50 * 1000 * 1000 };

	for (int waited = 0;; waited += 50) {
		bool any = false;

		for (size_t i = 0; i < n; i++)
			if (g[i].matched && proc_group_alive(g[i].pgid))
				any = true;
		if (!any)
			return true;
		if (waited >= ms)
			return false;
		nanosleep(&step, NULL);
	}
}

void
proc_end_groups(struct proc_group *g, size_t n, int term_ms, int kill_ms)
{
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		int64_t start;

		g[i].matched = g[i].killed = g[i].survived = false;
		if (g[i].pgid <= 1 ||
		    proc_start_time(g[i].pgid, &start) < 0 ||
		    start != g[i].start)
			continue;
		g[i].matched = true;
		any = true;
		kill(-g[i].pgid, SIGTERM);
		kill(-g[i].pgid, SIGCONT); /* a stopped group cannot die of TERM */
	}
	if (!any || proc_wait_groups(g, n, term_ms))
		return;
	for (size_t i = 0; i < n; i++) {
		if (!g[i].matched || !proc_group_alive(g[i].pgid))
			continue;
		g[i].killed = true;
		kill(-g[i].pgid, SIGKILL);
	}
	if (proc_wait_groups(g, n, kill_ms))
		return;
	for (size_t i = 0; i < n; i++)
		if (g[i].matched && proc_group_alive(g[i].pgid))
			g[i].survived = true;
}

/* Does /proc/PID/environ hold the entry `marker` exactly? */
static bool
proc_environ_has(pid_t pid, const char *marker)
{
	char path[64], buf[65536];
	size_t n, len = strlen(marker);
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false; /* gone, or another user's */
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (size_t off = 0; off < n; off += strlen(buf + off) + 1)
		if (strncmp(buf + off, marker, len) == 0 && buf[off + len] == '\0')
			return true;
	return false;
}

int
proc_find_marked(const char *marker, struct proc_group **out, size_t *n)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t cap = 0;
	pid_t self = getpid();

	*out = NULL;
	*n = 0;
	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		char *end, state;
		long v = strtol(de->d_name, &end, 10);
		pid_t pgrp = 0;
		int64_t start;

		if (*end != '\0' || v <= 1 || (pid_t)v == self)
			continue;
		/* group leaders only: a command run leads its own group */
		if (proc_stat((pid_t)v, &state, &pgrp, &start) < 0 ||
		    pgrp != (pid_t)v || state == 'Z' ||
		    !proc_environ_has((pid_t)v, marker))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			*out = xreallocarray(*out, cap, sizeof **out);
		}
		memset(&(*out)[*n], 0, sizeof **out);
		(*out)[*n].pgid = (pid_t)v;
		(*out)[*n].start = start;
		(*n)++;
	}
	closedir(d);
	return 0;
}

/* Apply close_range(2) to every descriptor above 2 but keep; flags 0
 * closes them.  -1 when the kernel cannot. */
static int
proc_range(int keep, unsigned int flags)
{
#ifdef CLOSE_RANGE_CLOEXEC
	if (keep < 3)
		return close_range(3, ~0U, flags);
	if (keep > 3 && close_range(3, (unsigned int)keep - 1, flags) == -1)
		return -1;
	return close_range((unsigned int)keep + 1, ~0U, flags);
#else
	(void)keep;
	(void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

/* The same by /proc/self/fd, for a kernel without close_range. */
static void
proc_each_fd(int keep, bool close_them)
{
	struct dirent *e;
	DIR *d;
	int fd;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		fd = atoi(e->d_name);
		if (fd < 3 || fd == keep || fd == dirfd(d))
			continue;
		if (close_them)
			close(fd);
		else
			fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
	}
	closedir(d);
}

void
proc_cloexec_all(int keep)
{
#ifdef CLOSE_RANGE_CLOEXEC
	if (proc_range(keep, CLOSE_RANGE_CLOEXEC) == 0)
		return;
#endif
	proc_each_fd(keep, false);
}

int
proc_fd_free(void)
{
	struct rlimit rl;
	struct dirent *e;
	long open = 0;
	DIR *d;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur == RLIM_INFINITY)
		return -1;
	if ((d = opendir("/proc/self/fd")) == NULL)
		return errno == EMFILE || errno == ENFILE ? 0 : -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			open++;
	closedir(d);
	open--; /* the listing's own */
	if ((long long)rl.rlim_cur - open > 1 << 30)
		return 1 << 30;
	return (int)((long long)rl.rlim_cur - open);
}

void
proc_close_strays(int keep)
{
	if (proc_range(keep, 0) == 0)
		return;
	proc_each_fd(keep, true);
}
