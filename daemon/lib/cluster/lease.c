/*
 * lease.c - the rules of several hosts as pure functions (lease.h states
 * them; docs/several-hosts.md explains them to operators).
 */
#include "lease.h"

#include <stdio.h>
#include <string.h>

enum lease_action
lease_decide(const struct lease_row *row, const char *me, int64_t my_gen,
	     int64_t now_ms)
{
	bool valid = row->exists && row->holder[0] != '\0' &&
		     now_ms < row->expires_ms;
	bool mine = row->exists && strcmp(row->holder, me) == 0;

	if (my_gen > 0) {
		/* planner: renew only the very lease it holds, still valid */
		if (valid && mine && row->generation == my_gen)
			return LEASE_RENEW;
		return LEASE_DEPOSED;
	}
	return valid ? LEASE_WAIT : LEASE_ACQUIRE;
}

const char *
lease_action_name(enum lease_action a)
{
	switch (a) {
	case LEASE_ACQUIRE:
		return "acquire";
	case LEASE_RENEW:
		return "renew";
	case LEASE_WAIT:
		return "wait";
	case LEASE_DEPOSED:
		return "deposed";
	}
	return "?";
}

int64_t
lease_heartbeat_ms(int64_t lease_s)
{
	return lease_s * 1000 / 3;
}

int64_t
lease_local_deadline(int64_t sent_mono_ms, int64_t lease_s)
{
	return sent_mono_ms + lease_s * 1000;
}

int64_t
lease_dead_ms(int64_t lease_s)
{
	return lease_s * 1000;
}

bool
lease_node_dead(int64_t last_seen_ms, int64_t now_ms, int64_t lease_s)
{
	return now_ms - last_seen_ms > lease_dead_ms(lease_s);
}

/* Append to buf (a line being built, at *o) without overflowing it. */
static void
lease_append(char *buf, size_t len, size_t *o, const char *s)
{
	size_t n = strlen(s);

	if (*o >= len)
		return;
	if (n > len - *o - 1)
		n = len - *o - 1;
	memcpy(buf + *o, s, n);
	*o += n;
	buf[*o] = '\0';
}

/* True when live node i is the first live node with its hash. */
static bool
lease_first_of_hash(const struct lease_node *nodes, size_t i, int64_t now_ms,
		    int64_t lease_s)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (!lease_node_dead(nodes[j].last_seen_ms, now_ms, lease_s) &&
		    strcmp(nodes[j].config_hash, nodes[i].config_hash) == 0)
			return false;
	return true;
}

bool
lease_config_mismatch(const struct lease_node *nodes, size_t n,
		      int64_t now_ms, int64_t lease_s, char *buf, size_t len)
{
	size_t i, j, o = 0, groups = 0;

	if (len > 0)
		buf[0] = '\0';
	for (i = 0; i < n; i++)
		if (!lease_node_dead(nodes[i].last_seen_ms, now_ms, lease_s) &&
		    lease_first_of_hash(nodes, i, now_ms, lease_s))
			groups++;
	if (groups < 2)
		return false;
	lease_append(buf, len, &o, "nodes run different configurations:");
	groups = 0;
	for (i = 0; i < n; i++) {
		bool first = true;

		if (lease_node_dead(nodes[i].last_seen_ms, now_ms, lease_s) ||
		    !lease_first_of_hash(nodes, i, now_ms, lease_s))
			continue;
		lease_append(buf, len, &o, groups++ ? "; " : " ");
		lease_append(buf, len, &o, nodes[i].config_hash);
		lease_append(buf, len, &o, " on ");
		for (j = i; j < n; j++) {
			if (lease_node_dead(nodes[j].last_seen_ms, now_ms,
					    lease_s) ||
			    strcmp(nodes[j].config_hash, nodes[i].config_hash))
				continue;
			lease_append(buf, len, &o, first ? "" : ", ");
			lease_append(buf, len, &o, nodes[j].name);
			first = false;
		}
	}
	return true;
}

bool
lease_job_allowed(char *const *nodes, size_t n, const char *me)
{
	size_t i;

	if (n == 0)
		return true;
	for (i = 0; i < n; i++)
		if (strcmp(nodes[i], me) == 0)
			return true;
	return false;
}

bool
lease_job_stranded(char *const *nodes, size_t n,
		   const struct lease_node *live, size_t nlive,
		   int64_t now_ms, int64_t lease_s)
{
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < nlive; i++)
		if (!lease_node_dead(live[i].last_seen_ms, now_ms, lease_s) &&
		    lease_job_allowed(nodes, n, live[i].name))
			return false;
	return true;
}

int
lease_share(int max_concurrency, int live_nodes)
{
	int share;

	if (max_concurrency < 1)
		return 0;
	if (live_nodes < 1)
		return max_concurrency;
	share = max_concurrency / live_nodes +
		(max_concurrency % live_nodes != 0);
	return share < 1 ? 1 : share;
}
