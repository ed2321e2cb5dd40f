/*
 * cluster.c - the daemon's side of several hosts that needs no libpq:
 * finding cluster_pg_driver in the PostgreSQL module (cluster.h).
 */
#include "cluster.h"
#include "module.h"

#include <stdio.h>

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
cluster_driver_load(char *why, size_t len)
{
	return module_symbol("cluster_pg_driver", "the several-hosts"
			     " coordination", why, len);
}
