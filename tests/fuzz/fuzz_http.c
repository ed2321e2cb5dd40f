/*
 * fuzz_http.c - libFuzzer target: the HTTP endpoint's request head parser,
 * http_parse_head(), fed the bytes a client sent.
 *
 * Invariants (FUZZ_CHECK traps when one breaks):
 *  - MORE only below the bound: a client cannot make the parser wait
 *    for more than HTTP_HEAD_MAX bytes;
 *  - an error's status is one of 400, 405, 414, 431, 505, with a reason;
 *  - a head it accepts lies within the input and the bound, ends in LF,
 *    names a path that starts with '/' and holds only visible ASCII (an
 *    absolute-form target is taken as its path), and a query of visible
 *    ASCII within its bound, and
 *    parses again, alone, to the same request; each shorter prefix of it
 *    is MORE or the same kind of answer, never a different request.
 */
#include "fuzz.h"

#include "http.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data;
	struct http_req req, again;
	int status = 0, st2;
	const char *why = NULL, *why2;
	enum http_parse r;
	size_t max = HTTP_HEAD_MAX;

	r = http_parse_head(d, size, max, &req, &status, &why);
	if (r == HTTP_PARSE_MORE) {
		FUZZ_CHECK(size < max);
		return 0;
	}
	if (r == HTTP_PARSE_ERROR) {
		FUZZ_CHECK(status == 400 || status == 405 || status == 414 ||
			   status == 431 || status == 505);
		FUZZ_CHECK(why != NULL && why[0] != '\0');
		return 0;
	}
	FUZZ_CHECK(req.head_len > 0 && req.head_len <= size &&
		   req.head_len <= max);
	FUZZ_CHECK(d[req.head_len - 1] == '\n');
	FUZZ_CHECK(req.path[0] == '/');
	for (size_t i = 0; req.path[i] != '\0'; i++)
		FUZZ_CHECK((unsigned char)req.path[i] > 0x20 &&
			   (unsigned char)req.path[i] < 0x7f);
	FUZZ_CHECK(strlen(req.query) < HTTP_QUERY_MAX);
	for (size_t i = 0; req.query[i] != '\0'; i++)
		FUZZ_CHECK((unsigned char)req.query[i] > 0x20 &&
			   (unsigned char)req.query[i] < 0x7f);
	FUZZ_CHECK(req.method == HTTP_GET || req.method == HTTP_HEAD);
	FUZZ_CHECK(http_parse_head(d, req.head_len, max, &again, &st2, &why2)
		   == HTTP_PARSE_DONE);
	FUZZ_CHECK(strcmp(again.path, req.path) == 0 &&
		   strcmp(again.query, req.query) == 0 &&
		   again.method == req.method && again.minor == req.minor &&
		   again.head_len == req.head_len);
	for (size_t n = 0; n < req.head_len; n += 1 + n / 8)
		FUZZ_CHECK(http_parse_head(d, n, max, &again, &st2, &why2) ==
			   HTTP_PARSE_MORE);
	return 0;
}
