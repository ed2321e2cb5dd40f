/*
 * lease.h - the rules of several hosts (docs/several-hosts.md) as pure
 * functions: who is planner, which nodes are dead, whether the nodes run
 * one configuration, which node may run a job.  No clock, no I/O: every
 * time is given, and every time is the database's (now() of the server
 * the nodes share), so that the clocks of the nodes never matter.
 *
 * Rules that must always hold:
 *  LEASE-1. At most one node acts as planner at any instant of the database's
 *     clock: the one named by the lease row while expires > now.  A node
 *     takes the lease only when it is free or expired, and taking it adds
 *     one to the generation; every planner write carries the generation it
 *     holds and the store refuses it when the row has moved on (the fence).
 *  LEASE-2. A planner stops acting as one the moment its lease could have
 *     expired: locally, lease seconds after it *sent* its last successful
 *     renewal (lease_local_deadline), which is never later than the
 *     database's expiry.  A renewal that finds the row changed, or
 *     expired, deposes it (it never renews a lease it may have lost).
 *  LEASE-3. A node is dead when its last heartbeat is older than the lease.
 *     Nodes heartbeat every third of the lease, so a live node is at most
 *     a third of it old, and a lost heartbeat or two never kill it.
 *  LEASE-4. A node whose incarnation in the store differs from its own was
 *     declared dead meanwhile: it writes nothing more before it has
 *     cancelled its runs in flight and registered again.
 */
#ifndef BACKFILLD_LEASE_H
#define BACKFILLD_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEASE_NAME_MAX 65 /* a node name (64) and its NUL */

/* The lease row as read from the store (one row, id 1). */
struct lease_row {
	bool exists;                 /* false: nobody ever held it */
	char holder[LEASE_NAME_MAX]; /* "" when released */
	int64_t generation;          /* 0 before the first planner */
	int64_t expires_ms;          /* database clock */
};

enum lease_action {
	LEASE_ACQUIRE, /* free or expired: take it with generation + 1 */
	LEASE_RENEW,   /* ours and valid: extend it to now + lease */
	LEASE_WAIT,    /* another node (or our previous process) holds it */
	LEASE_DEPOSED, /* we were planner and are no longer: stop at once */
};

/*
 * What node `me` does with the lease at database time now_ms.  my_gen is
 * the generation it acts as planner under, 0 when it is not planner.
 * A node that was not planner waits while any valid lease stands, even
 * one in its own name (a previous process of the same node: it may still
 * run); a clean stop releases the lease so that nobody waits for it.
 */
enum lease_action lease_decide(const struct lease_row *row, const char *me,
			       int64_t my_gen, int64_t now_ms);
/* The action's name for logs: acquire, renew, wait, deposed. */
const char *lease_action_name(enum lease_action a);

/* Heartbeat period (and lease renewal period) for a lease, in ms. */
int64_t lease_heartbeat_ms(int64_t lease_s);
/* Local monotonic time past which a planner must stop acting as one: the
 * lease counted from when its successful renewal was sent (LEASE-2). */
int64_t lease_local_deadline(int64_t sent_mono_ms, int64_t lease_s);

/* One row of the nodes table. */
struct lease_node {
	const char *name;
	int64_t incarnation;
	int64_t last_seen_ms; /* database clock */
	int running;
	const char *config_hash;
	const char *role;     /* "planner", "worker" */
};

/* True when a node last seen at last_seen_ms is dead at now_ms (LEASE-3,
 * LEASE-3): silent for more than lease_dead_ms(lease_s). */
bool lease_node_dead(int64_t last_seen_ms, int64_t now_ms, int64_t lease_s);
/* LEASE-3's one bound: a node silent for more than this many ms is dead. */
int64_t lease_dead_ms(int64_t lease_s);
/* LEASE-3 in SQL, for the statements of the store that the planner runs
 * (cluster_pg.c: the reap, and the heartbeat's count of live nodes): the
 * node whose last heartbeat is the timestamptz col is dead by the
 * database's now(), ms naming the bound parameter that holds
 * lease_dead_ms(lease_s) -- lease_node_dead's rule, strict as it is
 * (test_store checks the two agree on a server). */
#define LEASE_SQL_DEAD(col, ms) \
	"(" col " < now() - " ms " * interval '1 millisecond')"

/*
 * When the live nodes run different configurations, write one line into
 * buf ("nodes run different configurations: 0123... on etl-1, etl-3;
 * 89ab... on etl-2") and return true; else return false (buf "").  The
 * hashes are listed in the order their first node comes in nodes.
 */
bool lease_config_mismatch(const struct lease_node *nodes, size_t n,
			   int64_t now_ms, int64_t lease_s, char *buf,
			   size_t len);

/* True when a job whose nodes: list is `nodes` (n names; n 0: any node)
 * may run on node `me`. */
bool lease_job_allowed(char *const *nodes, size_t n, const char *me);
/* True when a pinned job (n > 0) can run on none of the live nodes: the
 * status warns that its runs wait for a node that is not there. */
bool lease_job_stranded(char *const *nodes, size_t n,
			const struct lease_node *live, size_t nlive,
			int64_t now_ms, int64_t lease_s);

/*
 * The planner's share of the runs in flight (docs/several-hosts.md): it
 * runs a run itself, without offering it, while it runs fewer than this
 * (its own runs and its claims together).  Its fair part of
 * max_concurrency over the live nodes, rounded up, so that a backfill
 * still spreads over every node; at least 1, and max_concurrency when
 * the count of live nodes is not known (0 or less: alone, as far as it
 * knows).
 */
int lease_share(int max_concurrency, int live_nodes);

#endif
