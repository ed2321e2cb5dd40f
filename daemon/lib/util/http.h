/*
 * http.h - the HTTP/1.1 of the read-only endpoint (pure: no I/O).
 *
 * The endpoint (daemon/server/control/httpd.c, docs/http.md) reads one request
 * head per connection, answers it and closes: so a parser needs only the
 * head.  http_parse_head() is called on the bytes read so far, from the
 * start each time (a head is at most HTTP_HEAD_MAX bytes, so that costs
 * little), and says whether the head is complete, still incomplete, or
 * refused with the status to answer.  Rules, in the order checked:
 *  - a head longer than `max` bytes is 431 (or 414 when the request line
 *    alone is longer), before its end arrives;
 *  - the request line is METHOD SP TARGET SP HTTP/1.x, each line ending
 *    in CRLF (a bare LF is taken too, as RFC 9112 allows); empty lines
 *    before it are skipped; anything else is 400, a version other than
 *    1.0 and 1.1 is 505; a request line not ended yet that holds a control
 *    byte, or a method byte that is no token byte, is 400 at once;
 *  - the method is a token; GET and HEAD are served, any other is 405
 *    (with Allow: GET, HEAD);
 *  - the target is origin-form (starts with '/') or absolute-form
 *    (http://AUTHORITY/PATH or https://..., scheme in any case: RFC 9112
 *    says a server must accept it; its path is taken, "/" when it has
 *    none), of visible ASCII; the query is kept apart from the path
 *    (cut at HTTP_QUERY_MAX - 1 bytes, flagged); anything else is 400;
 *  - each header is NAME ":" value, NAME a token; at most
 *    HTTP_HEADERS_MAX of them; obsolete line folding, a space before the
 *    colon, a NUL or another control byte are 400;
 *  - HTTP/1.1 needs exactly one Host; a body (Content-Length other than
 *    0, any Transfer-Encoding) is 400: nothing served takes one.
 */
#ifndef BACKFILLD_HTTP_H
#define BACKFILLD_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define HTTP_HEAD_MAX 8192     /* bytes of a request head, at most */
#define HTTP_HEADERS_MAX 64    /* header lines, at most */
#define HTTP_PATH_MAX 256      /* bytes of a path kept (longer: 404) */
#define HTTP_QUERY_MAX 256     /* bytes of a query kept */

enum http_method { HTTP_GET, HTTP_HEAD, HTTP_OTHER };

struct http_req {
	enum http_method method;
	int minor;                 /* HTTP/1.minor */
	char path[HTTP_PATH_MAX];  /* the target without its query */
	bool path_long;            /* longer than HTTP_PATH_MAX - 1 */
	char query[HTTP_QUERY_MAX]; /* after the '?', without it ("": none) */
	bool query_long;           /* longer than HTTP_QUERY_MAX - 1 */
	size_t head_len;           /* bytes of the head, final CRLF included */
};

/* What http_parse_head found. */
enum http_parse {
	HTTP_PARSE_MORE,  /* no complete head yet, and within the bound */
	HTTP_PARSE_DONE,  /* *req filled */
	HTTP_PARSE_ERROR  /* *status and *why say what to answer */
};

/* Parse the head at the start of data[0..len) (see the rules above).
 * On HTTP_PARSE_ERROR, *status is 400, 405, 414, 431 or 505 and *why a
 * static line for the body. */
enum http_parse http_parse_head(const char *data, size_t len, size_t max,
				struct http_req *req, int *status,
				const char **why);

/* The value of the first parameter `name` of a query ("a=1&b=x%2Fy"):
 * 1 with it in out (percent escapes and '+' decoded, NUL-ended; a
 * parameter without '=' has the value ""), 0 when the query has no such
 * parameter, -1 when its value has a bad escape, decodes to a control
 * byte, or does not fit outsz. */
int http_query_get(const char *query, const char *name, char *out,
		   size_t outsz);

/* Append value to a query, percent-encoded as
 * application/x-www-form-urlencoded wants it: every byte but
 * [A-Za-z0-9._~:-] as %XX, so a zoned hour's '+' goes as %2B (a bare '+'
 * would decode as a space). */
void http_query_put(struct buf *o, const char *value);

/* The reason phrase of a status this server answers ("Unknown" else). */
const char *http_reason(int status);

/* Append a response head: status line, Content-Type (when ctype is not
 * NULL), Content-Length, Connection: close, Cache-Control: no-store, and
 * Allow: GET, HEAD for 405. */
void http_head(struct buf *out, int status, const char *ctype, size_t length);

/*
 * The address of http_listen: "PORT" (127.0.0.1), "IPV4:PORT" or
 * "[IPV6]:PORT", PORT from 0 to 65535 (0: any free port, the one chosen
 * is logged).  Fills host (a numeric address, at most 46 bytes with its
 * NUL) and *port, and *loopback when the address is 127.0.0.0/8, ::1 or
 * an IPv4-mapped loopback (::ffff:127.0.0.0/104).
 * Returns 0, or -1 with *why a static line saying what is wrong.
 */
#define HTTP_HOST_MAX 46
int http_listen_parse(const char *text, char *host, int *port,
		      bool *loopback, const char **why);

#endif
