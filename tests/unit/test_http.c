/*
 * test_http.c - the HTTP endpoint's pure part (daemon/lib/util/http.c): the
 * request line, headers and their bounds, response heads and the
 * http_listen address, from tables.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

/* A head and what the parser must say of it (status 0: done). */
static const struct {
	const char *head;
	enum http_parse want;
	int status;
	const char *path;
} heads[] = {
	{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_PARSE_DONE, 0,
	  "/metrics" },
	{ "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_PARSE_DONE, 0,
	  "/healthz" },
	{ "GET /status?x=1 HTTP/1.0\r\n\r\n", HTTP_PARSE_DONE, 0, "/status" },
	{ "GET /report HTTP/1.1\nHost: x\n\n", HTTP_PARSE_DONE, 0, "/report" },
	{ "\r\nGET / HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
	  HTTP_PARSE_DONE, 0, "/" },
	{ "GET /m HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
	  HTTP_PARSE_DONE, 0, "/m" },
	{ "GET /m HTTP/1.1\r\nhOsT:x\r\nX-A: caf\xc3\xa9\r\n\r\n",
	  HTTP_PARSE_DONE, 0, "/m" },
	/* absolute-form (RFC 9112 3.2.2): its path */
	{ "GET http://127.0.0.1:9187/metrics HTTP/1.1\r\nHost: x\r\n\r\n",
	  HTTP_PARSE_DONE, 0, "/metrics" },
	{ "GET HTTPS://[::1]:1/report?job=a HTTP/1.0\r\n\r\n",
	  HTTP_PARSE_DONE, 0, "/report" },
	{ "GET http://h HTTP/1.1\r\nHost: h\r\n\r\n", HTTP_PARSE_DONE, 0,
	  "/" },
	{ "GET http://h?x HTTP/1.1\r\nHost: h\r\n\r\n", HTTP_PARSE_DONE, 0,
	  "/" },
	/* incomplete */
	{ "", HTTP_PARSE_MORE, 0, NULL },
	{ "GET /metrics HT", HTTP_PARSE_MORE, 0, NULL },
	{ "GET /metrics HTTP/1.1\r\nHost: x\r\n", HTTP_PARSE_MORE, 0, NULL },
	/* the request line */
	{ "POST /metrics HTTP/1.1\r\n", HTTP_PARSE_ERROR, 405, NULL },
	{ "DELETE / HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_PARSE_ERROR, 405, NULL },
	{ "get /metrics HTTP/1.1\r\n", HTTP_PARSE_ERROR, 405, NULL },
	{ "GET /metrics HTTP/2.0\r\n", HTTP_PARSE_ERROR, 505, NULL },
	{ "GET /metrics HTTP/1.2\r\n", HTTP_PARSE_ERROR, 505, NULL },
	{ "GET /metrics HTTP/1.1 \r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET  /metrics HTTP/1.1\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET /metrics\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET http:///metrics HTTP/1.1\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET http:/metrics HTTP/1.1\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET ftp://h/metrics HTTP/1.1\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET * HTTP/1.1\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "G(T / HTTP/1.1\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET /a\x01 HTTP/1.1\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET /a\rb HTTP/1.1\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "\x16\x03\x01\x02\x05\x01\xfc\x03\x03\n", HTTP_PARSE_ERROR,
	  400, NULL },
	/* refused before the line ends */
	{ "\x16\x03\x01\x02", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET /x\x01", HTTP_PARSE_ERROR, 400, NULL },
	{ "GE(", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET /x HTTP/1.1\r", HTTP_PARSE_MORE, 0, NULL },
	/* headers */
	{ "GET / HTTP/1.1\r\n\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", HTTP_PARSE_ERROR, 400,
	  NULL },
	{ "GET / HTTP/1.1\r\nHost : a\r\n\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", HTTP_PARSE_ERROR, 400,
	  NULL },
	{ "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", HTTP_PARSE_ERROR, 400,
	  NULL },
	{ "GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n", HTTP_PARSE_ERROR, 400, NULL },
	{ "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	  HTTP_PARSE_ERROR, 400, NULL },
	{ "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n",
	  HTTP_PARSE_ERROR, 400, NULL },
	{ "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
	  HTTP_PARSE_ERROR, 400, NULL },
};

START_TEST(test_heads)
{
	for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
		struct http_req req;
		int status = 0;
		const char *why = NULL;
		enum http_parse r;

		r = http_parse_head(heads[i].head, strlen(heads[i].head),
				    HTTP_HEAD_MAX, &req, &status, &why);
		ck_assert_msg(r == heads[i].want, "case %zu (%s): got %d", i,
			      heads[i].head, (int)r);
		if (r == HTTP_PARSE_ERROR) {
			ck_assert_int_eq(status, heads[i].status);
			ck_assert(why != NULL && why[0] != '\0');
		}
		if (r == HTTP_PARSE_DONE) {
			ck_assert_str_eq(req.path, heads[i].path);
			ck_assert_uint_le(req.head_len, strlen(heads[i].head));
			ck_assert(heads[i].head[req.head_len - 1] == '\n');
		}
	}
}
END_TEST

/* The query is kept apart from the path, in both forms of target;
 * a long one is cut and flagged. */
START_TEST(test_query)
{
	static const struct {
		const char *head, *path, *query;
	} q[] = {
		{ "GET /report?job=a&page=2 HTTP/1.0\r\n\r\n", "/report",
		  "job=a&page=2" },
		{ "GET /report HTTP/1.0\r\n\r\n", "/report", "" },
		{ "GET /report? HTTP/1.0\r\n\r\n", "/report", "" },
		{ "GET /a?b?c HTTP/1.0\r\n\r\n", "/a", "b?c" },
		{ "GET http://h:1/report?page=3 HTTP/1.0\r\n\r\n", "/report",
		  "page=3" },
		{ "GET http://h:1?page=3 HTTP/1.0\r\n\r\n", "/", "page=3" },
	};
	struct http_req req;
	int status;
	const char *why;
	char head[1024];

	for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
		ck_assert_int_eq(http_parse_head(q[i].head, strlen(q[i].head),
						 HTTP_HEAD_MAX, &req, &status,
						 &why), HTTP_PARSE_DONE);
		ck_assert_str_eq(req.path, q[i].path);
		ck_assert_str_eq(req.query, q[i].query);
		ck_assert(!req.query_long);
	}
	snprintf(head, sizeof head, "GET /r?%0600d HTTP/1.0\r\n\r\n", 7);
	ck_assert_int_eq(http_parse_head(head, strlen(head), HTTP_HEAD_MAX,
					 &req, &status, &why), HTTP_PARSE_DONE);
	ck_assert_str_eq(req.path, "/r");
	ck_assert(req.query_long);
	ck_assert_uint_eq(strlen(req.query), HTTP_QUERY_MAX - 1);
}
END_TEST

/* A query's parameters: the first of a name, decoded; bad escapes,
 * control bytes and values too long are -1. */
START_TEST(test_query_get)
{
	char v[8];

	ck_assert_int_eq(http_query_get("job=a&page=2", "job", v, sizeof v), 1);
	ck_assert_str_eq(v, "a");
	ck_assert_int_eq(http_query_get("job=a&page=2", "page", v, sizeof v),
			 1);
	ck_assert_str_eq(v, "2");
	ck_assert_int_eq(http_query_get("jobs=a&job=b", "job", v, sizeof v),
			 1);
	ck_assert_str_eq(v, "b");
	ck_assert_int_eq(http_query_get("job=a&job=b", "job", v, sizeof v), 1);
	ck_assert_str_eq(v, "a");
	ck_assert_int_eq(http_query_get("a%2Fb+c=1&x=%41%2f+", "x", v,
					sizeof v), 1);
	ck_assert_str_eq(v, "A/ ");
	ck_assert_int_eq(http_query_get("flag&x=1", "flag", v, sizeof v), 1);
	ck_assert_str_eq(v, "");
	ck_assert_int_eq(http_query_get("", "job", v, sizeof v), 0);
	ck_assert_int_eq(http_query_get("jo=1&&obj=2", "job", v, sizeof v), 0);
	ck_assert_int_eq(http_query_get("job=%4", "job", v, sizeof v), -1);
	ck_assert_int_eq(http_query_get("job=%zz", "job", v, sizeof v), -1);
	ck_assert_int_eq(http_query_get("job=%0a", "job", v, sizeof v), -1);
	ck_assert_int_eq(http_query_get("job=12345678", "job", v, sizeof v),
			 -1);
	ck_assert_int_eq(http_query_get("job=1234567", "job", v, sizeof v), 1);
}
END_TEST

/* A zoned hour's key in a report link: its '+' goes as %2B (a bare '+'
 * is a space in application/x-www-form-urlencoded) and the reader gives
 * the key back. */
START_TEST(test_query_put)
{
	static const char key[] = "2023-10-29T02+02:00";
	char v[32];
	struct buf q;

	buf_init(&q);
	buf_addstr(&q, "job=b&from=");
	http_query_put(&q, key);
	ck_assert_str_eq(q.data, "job=b&from=2023-10-29T02%2B02:00");
	ck_assert_int_eq(http_query_get(q.data, "from", v, sizeof v), 1);
	ck_assert_str_eq(v, key);
	/* unencoded, the '+' would be read as a space */
	ck_assert_int_eq(http_query_get("from=2023-10-29T02+02:00", "from", v,
					sizeof v), 1);
	ck_assert_str_eq(v, "2023-10-29T02 02:00");
	buf_reset(&q);
	http_query_put(&q, "a b&c=d/%");
	ck_assert_str_eq(q.data, "a%20b%26c%3Dd%2F%25");
	ck_assert_int_eq(http_query_get("x=2023-10-29T02%2b01:00", "x", v,
					sizeof v), 1);
	ck_assert_str_eq(v, "2023-10-29T02+01:00");
	buf_free(&q);
}
END_TEST

/* Every prefix of a good head is MORE, the whole of it DONE. */
START_TEST(test_prefixes)
{
	const char *h = "GET /metrics HTTP/1.1\r\nHost: x\r\nA: b\r\n\r\n";
	struct http_req req;
	int status;
	const char *why;

	for (size_t n = 0; n < strlen(h); n++)
		ck_assert_int_eq(http_parse_head(h, n, HTTP_HEAD_MAX, &req,
						 &status, &why),
				 HTTP_PARSE_MORE);
	ck_assert_int_eq(http_parse_head(h, strlen(h), HTTP_HEAD_MAX, &req,
					 &status, &why), HTTP_PARSE_DONE);
	ck_assert_int_eq(req.method, HTTP_GET);
	ck_assert_int_eq(req.minor, 1);
	ck_assert_uint_eq(req.head_len, strlen(h));
}
END_TEST

/* The bounds: head size (414 on the request line, 431 after it), the
 * number of headers, a long path kept cut and flagged. */
START_TEST(test_limits)
{
	struct buf b;
	struct http_req req;
	int status;
	const char *why;

	buf_init(&b);
	buf_addstr(&b, "GET /");
	while (b.len < 100)
		buf_addstr(&b, "a");
	ck_assert_int_eq(http_parse_head(b.data, b.len, 100, &req, &status,
					 &why), HTTP_PARSE_ERROR);
	ck_assert_int_eq(status, 414);
	ck_assert_int_eq(http_parse_head(b.data, 99, 100, &req, &status, &why),
			 HTTP_PARSE_MORE);

	buf_reset(&b);
	buf_addstr(&b, "GET / HTTP/1.1\r\nHost: x\r\nX: ");
	while (b.len < HTTP_HEAD_MAX + 10)
		buf_addstr(&b, "y");
	ck_assert_int_eq(http_parse_head(b.data, b.len, HTTP_HEAD_MAX, &req,
					 &status, &why), HTTP_PARSE_ERROR);
	ck_assert_int_eq(status, 431);

	buf_reset(&b);
	buf_addstr(&b, "GET / HTTP/1.1\r\nHost: x\r\n");
	for (int i = 0; i < HTTP_HEADERS_MAX; i++)
		buf_printf(&b, "X-%d: y\r\n", i);
	ck_assert_int_eq(http_parse_head(b.data, b.len, HTTP_HEAD_MAX, &req,
					 &status, &why), HTTP_PARSE_ERROR);
	ck_assert_int_eq(status, 431);

	buf_reset(&b);
	buf_addstr(&b, "GET /");
	for (int i = 0; i < HTTP_PATH_MAX; i++)
		buf_addstr(&b, "p");
	buf_addstr(&b, " HTTP/1.0\r\n\r\n");
	ck_assert_int_eq(http_parse_head(b.data, b.len, HTTP_HEAD_MAX, &req,
					 &status, &why), HTTP_PARSE_DONE);
	ck_assert(req.path_long);
	ck_assert_uint_eq(strlen(req.path), HTTP_PATH_MAX - 1);
	buf_free(&b);
}
END_TEST

START_TEST(test_response_head)
{
	struct buf b;

	buf_init(&b);
	http_head(&b, 405, "text/plain; charset=utf-8", 12);
	ck_assert_str_eq(b.data, "HTTP/1.1 405 Method Not Allowed\r\n"
			 "Content-Type: text/plain; charset=utf-8\r\n"
			 "Content-Length: 12\r\nAllow: GET, HEAD\r\n"
			 "Cache-Control: no-store\r\nConnection: close\r\n\r\n");
	buf_reset(&b);
	http_head(&b, 503, NULL, 0);
	ck_assert(strncmp(b.data, "HTTP/1.1 503 Service Unavailable\r\n", 34)
		  == 0);
	ck_assert(strstr(b.data, "Allow") == NULL);
	ck_assert_str_eq(http_reason(431), "Request Header Fields Too Large");
	ck_assert_str_eq(http_reason(299), "Unknown");
	buf_free(&b);
}
END_TEST

static const struct {
	const char *text;
	int ok;
	const char *host;
	int port;
	bool loopback;
} listens[] = {
	{ "9187", 0, "127.0.0.1", 9187, true },
	{ "0", 0, "127.0.0.1", 0, true },
	{ "127.0.0.1:9187", 0, "127.0.0.1", 9187, true },
	{ "127.1.2.3:80", 0, "127.1.2.3", 80, true },
	{ "0.0.0.0:9187", 0, "0.0.0.0", 9187, false },
	{ "10.0.0.5:65535", 0, "10.0.0.5", 65535, false },
	{ "[::1]:9187", 0, "::1", 9187, true },
	{ "[::]:9187", 0, "::", 9187, false },
	{ "[::ffff:127.0.0.1]:9187", 0, "::ffff:127.0.0.1", 9187, true },
	{ "[::ffff:127.9.8.7]:1", 0, "::ffff:127.9.8.7", 1, true },
	{ "[::ffff:10.0.0.1]:9187", 0, "::ffff:10.0.0.1", 9187, false },
	{ "[::127.0.0.1]:9187", 0, "::127.0.0.1", 9187, false },
	{ "localhost:9187", -1, NULL, 0, false },
	{ "127.0.0.1:65536", -1, NULL, 0, false },
	{ "127.0.0.1:", -1, NULL, 0, false },
	{ "127.0.0.1:-1", -1, NULL, 0, false },
	{ ":9187", -1, NULL, 0, false },
	{ "[::1]9187", -1, NULL, 0, false },
	{ "::1:9187", -1, NULL, 0, false },
	{ "999.0.0.1:80", -1, NULL, 0, false },
	{ "", -1, NULL, 0, false },
	{ "12a", -1, NULL, 0, false },
};

START_TEST(test_listen)
{
	for (size_t i = 0; i < sizeof listens / sizeof listens[0]; i++) {
		char host[HTTP_HOST_MAX];
		int port = -1;
		bool lo = false;
		const char *why = NULL;
		int rc = http_listen_parse(listens[i].text, host, &port, &lo,
					   &why);

		ck_assert_msg(rc == listens[i].ok, "%s: %d", listens[i].text,
			      rc);
		if (rc < 0) {
			ck_assert(why != NULL &&
				  strstr(why, "http_listen") != NULL);
			continue;
		}
		ck_assert_str_eq(host, listens[i].host);
		ck_assert_int_eq(port, listens[i].port);
		ck_assert_int_eq(lo, listens[i].loopback);
	}
}
END_TEST

static Suite *
http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_heads);
	tcase_add_test(tc, test_query);
	tcase_add_test(tc, test_query_get);
	tcase_add_test(tc, test_query_put);
	tcase_add_test(tc, test_prefixes);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_response_head);
	tcase_add_test(tc, test_listen);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(http_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
