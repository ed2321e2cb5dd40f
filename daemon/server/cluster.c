/*
 * cluster.c - the daemon's side of several hosts that needs no libpq:
 * finding cluster_pg_driver in the PostgreSQL module (cluster.h).
 */
#include "cluster.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *
cluster_role_name(enum cluster_role r)
{
	switch (r) {
	case CLUSTER_OFFLINE:
		return "offline";
	case CLUSTER_WORKER:
		return "worker";
	case CLUSTER_PLANNER:
		return "planner";
	}
	return "?";
}

const struct cluster_driver *
cluster_driver_load(const char *path, char *why, size_t len)
{
#ifdef HAVE_LIBPQ
	char exe[PATH_MAX], buf[PATH_MAX + 32];
	ssize_t n;
	void *h = NULL;
	const struct cluster_driver *drv;

	if (path == NULL) {
		/* beside the executable (a build tree), then installed */
		n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n > 0) {
			char *slash;

			exe[n] = '\0';
			if ((slash = strrchr(exe, '/')) != NULL) {
				*slash = '\0';
				snprintf(buf, sizeof buf, "%s/backfilld-pg.so",
					 exe);
				h = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
			}
		}
		if (h == NULL)
			snprintf(buf, sizeof buf, "%s/backfilld-pg.so",
				 BACKFILLD_MODULEDIR);
		path = buf;
	}
	if (h == NULL && (h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(why, len, "cannot load the PostgreSQL module %s: %s",
			 path, dlerror());
		return NULL;
	}
	drv = dlsym(h, "cluster_pg_driver");
	if (drv == NULL)
		snprintf(why, len, "%s has no cluster_pg_driver: reinstall"
			 " backfilld", path);
	return drv;
#else
	(void)path;
	snprintf(why, len, "this build has no PostgreSQL support"
		 " (meson -Dpostgres=enabled)");
	return NULL;
#endif
}
