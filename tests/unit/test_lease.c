/*
 * test_lease.c - the rules of several hosts (daemon/lease.h): the lease
 * decision from a table of rows, nodes and times; liveness at its edges;
 * the configuration mismatch line; nodes: pinning; the planner's share.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lease.h"

#define S 1000 /* ms */

struct decide_case {
	const char *what;
	bool exists;
	const char *holder;
	int64_t generation;
	int64_t expires_ms;
	const char *me;
	int64_t my_gen;
	int64_t now_ms;
	enum lease_action want;
};

static const struct decide_case decide_cases[] = {
	{ "no row yet", false, "", 0, 0, "a", 0, 100 * S, LEASE_ACQUIRE },
	{ "released", true, "", 4, 200 * S, "a", 0, 100 * S, LEASE_ACQUIRE },
	{ "held by b, valid", true, "b", 4, 110 * S, "a", 0, 100 * S,
	  LEASE_WAIT },
	{ "held by b, expires this instant", true, "b", 4, 100 * S, "a", 0,
	  100 * S, LEASE_ACQUIRE },
	{ "held by b, one ms left", true, "b", 4, 100 * S + 1, "a", 0,
	  100 * S, LEASE_WAIT },
	{ "held by b, expired", true, "b", 4, 90 * S, "a", 0, 100 * S,
	  LEASE_ACQUIRE },
	{ "our name, previous process, valid", true, "a", 4, 110 * S, "a", 0,
	  100 * S, LEASE_WAIT },
	{ "our name, previous process, expired", true, "a", 4, 99 * S, "a", 0,
	  100 * S, LEASE_ACQUIRE },
	{ "planner, ours, valid", true, "a", 4, 110 * S, "a", 4, 100 * S,
	  LEASE_RENEW },
	{ "planner, ours but expired", true, "a", 4, 100 * S, "a", 4, 100 * S,
	  LEASE_DEPOSED },
	{ "planner, taken by b", true, "b", 5, 110 * S, "a", 4, 100 * S,
	  LEASE_DEPOSED },
	{ "planner, our name, newer generation", true, "a", 5, 110 * S, "a", 4,
	  100 * S, LEASE_DEPOSED },
	{ "planner, released meanwhile", true, "", 4, 110 * S, "a", 4, 100 * S,
	  LEASE_DEPOSED },
	{ "planner, row gone", false, "", 0, 0, "a", 4, 100 * S,
	  LEASE_DEPOSED },
};

#define NDECIDE (int)(sizeof decide_cases / sizeof decide_cases[0])

/* Each row of the table decides as it says. */
START_TEST(test_decide)
{
	const struct decide_case *c = &decide_cases[_i];
	struct lease_row row;
	enum lease_action got;

	memset(&row, 0, sizeof row);
	row.exists = c->exists;
	strcpy(row.holder, c->holder);
	row.generation = c->generation;
	row.expires_ms = c->expires_ms;
	got = lease_decide(&row, c->me, c->my_gen, c->now_ms);
	ck_assert_msg(got == c->want, "%s: got %s, want %s", c->what,
		      lease_action_name(got), lease_action_name(c->want));
}
END_TEST

/* Heartbeat a third of the lease; the local deadline counts from when
 * the renewal was sent. */
START_TEST(test_periods)
{
	ck_assert_int_eq(lease_heartbeat_ms(10), 3333);
	ck_assert_int_eq(lease_heartbeat_ms(1), 333);
	ck_assert_int_eq(lease_heartbeat_ms(3), 1000);
	ck_assert_int_eq(lease_local_deadline(5000, 10), 15000);
	ck_assert_str_eq(lease_action_name(LEASE_ACQUIRE), "acquire");
	ck_assert_str_eq(lease_action_name(LEASE_RENEW), "renew");
	ck_assert_str_eq(lease_action_name(LEASE_WAIT), "wait");
	ck_assert_str_eq(lease_action_name(LEASE_DEPOSED), "deposed");
}
END_TEST

/* Dead: last seen strictly more than a lease ago. */
START_TEST(test_dead)
{
	static const struct lease_node nodes[] = {
		{ "a", 1, 100 * S, 0, "h1", "planner" },  /* just now */
		{ "b", 1, 90 * S, 2, "h1", "worker" },    /* exactly a lease */
		{ "c", 3, 90 * S - 1, 1, "h1", "worker" }, /* a ms more */
		{ "d", 1, 10 * S, 0, "h1", "worker" },    /* long gone */
		{ "e", 1, 101 * S, 0, "h1", "worker" },   /* after now */
	};
	static const bool at100[] = { false, false, true, true, false };
	static const bool at80[] = { false, false, false, true, false };

	for (size_t i = 0; i < 5; i++) {
		ck_assert_int_eq(lease_node_dead(nodes[i].last_seen_ms,
		    100 * S, 10), at100[i]);
		ck_assert_int_eq(lease_node_dead(nodes[i].last_seen_ms,
		    80 * S, 10), at80[i]);
		ck_assert(!lease_node_dead(nodes[i].last_seen_ms, 20 * S, 10));
	}
}
END_TEST

struct mismatch_case {
	const char *hashes[4]; /* of nodes a, b, c, d; NULL: no such node */
	bool dead[4];
	const char *want;      /* "" when none */
};

static const struct mismatch_case mismatch_cases[] = {
	{ { "h1", NULL }, { false }, "" },
	{ { "h1", "h1", "h1", NULL }, { false }, "" },
	{ { "h1", "h2", NULL }, { false },
	  "nodes run different configurations: h1 on a; h2 on b" },
	{ { "h1", "h2", "h1", "h3" }, { false },
	  "nodes run different configurations: h1 on a, c; h2 on b; h3 on d" },
	/* a dead node's old configuration does not count */
	{ { "h1", "h2", "h1", NULL }, { false, true, false }, "" },
	{ { "h2", "h1", "h1", NULL }, { true, false, false }, "" },
	{ { "h2", "h1", "h3", NULL }, { true, false, false },
	  "nodes run different configurations: h1 on b; h3 on c" },
};

#define NMISMATCH (int)(sizeof mismatch_cases / sizeof mismatch_cases[0])

/* The mismatch line lists each live hash with its nodes. */
START_TEST(test_mismatch)
{
	static const char *const names[] = { "a", "b", "c", "d" };
	const struct mismatch_case *c = &mismatch_cases[_i];
	struct lease_node nodes[4];
	char buf[256];
	size_t n;
	bool got;

	memset(nodes, 0, sizeof nodes);
	for (n = 0; n < 4 && c->hashes[n] != NULL; n++) {
		nodes[n].name = names[n];
		nodes[n].config_hash = c->hashes[n];
		nodes[n].last_seen_ms = c->dead[n] ? 50 * S : 99 * S;
	}
	got = lease_config_mismatch(nodes, n, 100 * S, 10, buf, sizeof buf);
	ck_assert_int_eq(got, c->want[0] != '\0');
	ck_assert_str_eq(buf, c->want);
}
END_TEST

/* A short buffer is cut, never overrun. */
START_TEST(test_mismatch_short)
{
	static const struct lease_node nodes[] = {
		{ "etl-1", 1, 100 * S, 0, "0123456789abcdef", "planner" },
		{ "etl-2", 1, 100 * S, 0, "fedcba9876543210", "worker" },
	};
	char buf[24];

	memset(buf, 'x', sizeof buf);
	ck_assert(lease_config_mismatch(nodes, 2, 100 * S, 10, buf, 20));
	ck_assert_uint_eq(strlen(buf), 19);
	ck_assert_int_eq(buf[20], 'x');
	/* no room at all: still true, nothing written */
	buf[0] = 'x';
	ck_assert(lease_config_mismatch(nodes, 2, 100 * S, 10, buf, 0));
	ck_assert_int_eq(buf[0], 'x');
}
END_TEST

/* nodes: pins a job; a pinned job with none of its nodes alive is
 * stranded. */
START_TEST(test_pinning)
{
	char *pins[] = { "etl-1", "etl-3" };
	const struct lease_node live[] = {
		{ "etl-1", 1, 50 * S, 0, "h", "worker" }, /* dead at 100 s */
		{ "etl-2", 1, 99 * S, 0, "h", "planner" },
		{ "etl-3", 1, 99 * S, 0, "h", "worker" },
	};

	ck_assert(lease_job_allowed(NULL, 0, "anyone"));
	ck_assert(lease_job_allowed(pins, 2, "etl-1"));
	ck_assert(lease_job_allowed(pins, 2, "etl-3"));
	ck_assert(!lease_job_allowed(pins, 2, "etl-2"));
	ck_assert(!lease_job_allowed(pins, 2, "etl-10"));
	ck_assert(!lease_job_allowed(pins, 2, "etl"));
	ck_assert(!lease_job_stranded(NULL, 0, live, 0, 100 * S, 10));
	ck_assert(!lease_job_stranded(pins, 2, live, 3, 100 * S, 10));
	/* etl-3 gone: etl-1 is dead too */
	ck_assert(lease_job_stranded(pins, 2, live, 2, 100 * S, 10));
	ck_assert(!lease_job_stranded(pins, 2, live, 2, 55 * S, 10));
}
END_TEST

/* The planner's share: its fair part, rounded up, over the live nodes. */
START_TEST(test_share)
{
	ck_assert_int_eq(lease_share(48, 3), 16);
	ck_assert_int_eq(lease_share(6, 3), 2);
	ck_assert_int_eq(lease_share(7, 3), 3);   /* rounded up */
	ck_assert_int_eq(lease_share(4, 3), 2);
	ck_assert_int_eq(lease_share(48, 1), 48); /* alone: all of it */
	ck_assert_int_eq(lease_share(2, 5), 1);   /* more nodes than runs */
	ck_assert_int_eq(lease_share(1, 64), 1);
	ck_assert_int_eq(lease_share(6, 0), 6);   /* not known yet */
	ck_assert_int_eq(lease_share(6, -1), 6);
	ck_assert_int_eq(lease_share(0, 3), 0);   /* nothing to share */
	/* the shares of the live nodes cover max_concurrency */
	for (int mc = 1; mc <= 50; mc++)
		for (int n = 1; n <= 10; n++) {
			ck_assert_int_ge(lease_share(mc, n) * n, mc);
			ck_assert_int_lt((lease_share(mc, n) - 1) * n, mc);
		}
}
END_TEST

/* Suite: lease. */
static Suite *
lease_suite(void)
{
	Suite *s = suite_create("lease");
	TCase *tc = tcase_create("lease");

	tcase_add_loop_test(tc, test_decide, 0, NDECIDE);
	tcase_add_test(tc, test_periods);
	tcase_add_test(tc, test_dead);
	tcase_add_loop_test(tc, test_mismatch, 0, NMISMATCH);
	tcase_add_test(tc, test_mismatch_short);
	tcase_add_test(tc, test_pinning);
	tcase_add_test(tc, test_share);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(lease_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
