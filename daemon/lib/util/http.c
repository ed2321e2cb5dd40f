/*
 * http.c - request heads, response heads and the listen address of the
 * read-only HTTP endpoint (pure; the rules are in http.h).
 */
#include "http.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A byte of a token (RFC 9110 tchar). */
static bool
http_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("!#$%&'*+-.^_`|~",
							   c) != NULL);
}

/* A byte of a header value: visible, space, tab or obs-text. */
static bool
http_vchar(unsigned char c)
{
	return c == ' ' || c == '\t' || (c > 0x20 && c != 0x7f);
}

static enum http_parse
http_refuse(int code, const char *msg, int *status, const char **why)
{
	*status = code;
	*why = msg;
	return HTTP_PARSE_ERROR;
}

/* METHOD SP TARGET SP HTTP/1.x in line[0..n). */
static enum http_parse
http_request_line(const char *line, size_t n, struct http_req *req,
		  int *status, const char **why)
{
	size_t m = 0, ts, te, plen;
	bool path_root = false;

	while (m < n && http_tchar((unsigned char)line[m]))
		m++;
	if (m == 0 || m >= n || line[m] != ' ')
		return http_refuse(400, "the request line is not METHOD TARGET"
				   " HTTP/1.1", status, why);
	ts = te = m + 1;
	while (te < n && (unsigned char)line[te] > 0x20 &&
	       (unsigned char)line[te] < 0x7f)
		te++;
	if (te == ts || te >= n || line[te] != ' ')
		return http_refuse(400, "the request line is not METHOD TARGET"
				   " HTTP/1.1", status, why);
	if (n - te - 1 != 8 || memcmp(line + te + 1, "HTTP/", 5) != 0 ||
	    line[te + 6] < '0' || line[te + 6] > '9' || line[te + 7] != '.' ||
	    line[te + 8] < '0' || line[te + 8] > '9')
		return http_refuse(400, "the request line does not end in"
				   " HTTP/1.1", status, why);
	if (line[te + 6] != '1' || line[te + 8] > '1')
		return http_refuse(505, "only HTTP/1.0 and HTTP/1.1 are"
				   " served", status, why);
	req->minor = line[te + 8] - '0';
	if (m == 3 && memcmp(line, "GET", 3) == 0)
		req->method = HTTP_GET;
	else if (m == 4 && memcmp(line, "HEAD", 4) == 0)
		req->method = HTTP_HEAD;
	else
		return http_refuse(405, "only GET and HEAD are served: the"
				   " endpoint is read-only", status, why);
	if (te - ts > 7 && (strncasecmp(line + ts, "http://", 7) == 0 ||
			    (te - ts > 8 &&
			     strncasecmp(line + ts, "https://", 8) == 0))) {
		/* absolute-form (RFC 9112 3.2.2): the path of the URI, "/"
		 * when it has none; its authority is not checked against
		 * Host (nothing served depends on the host) */
		size_t a = ts + (line[ts + 4] == ':' ? 7 : 8), host = a;

		while (a < te && line[a] != '/' && line[a] != '?')
			a++;
		if (a == host)
			return http_refuse(400, "the target's URI has no host",
					   status, why);
		path_root = a == te || line[a] == '?';
		ts = a;
	} else if (line[ts] != '/') {
		return http_refuse(400, "the target is not a path starting"
				   " with / (or an absolute http:// URI)",
				   status, why);
	}
	for (plen = 0; ts + plen < te && line[ts + plen] != '?'; plen++)
		;
	if (path_root) {
		strcpy(req->path, "/");
	} else {
		req->path_long = plen >= sizeof req->path;
		memcpy(req->path, line + ts, req->path_long ?
		       sizeof req->path - 1 : plen);
		req->path[req->path_long ? sizeof req->path - 1 : plen] = '\0';
	}
	if (ts + plen < te) {
		/* the query, after its '?' */
		size_t q = te - ts - plen - 1;

		req->query_long = q >= sizeof req->query;
		if (req->query_long)
			q = sizeof req->query - 1;
		memcpy(req->query, line + ts + plen + 1, q);
		req->query[q] = '\0';
	}
	return HTTP_PARSE_DONE;
}

/* What the headers seen so far imply. */
struct http_seen {
	int headers;
	int hosts;
};

/* NAME ":" OWS value OWS in line[0..n). */
static enum http_parse
http_header(const char *line, size_t n, struct http_seen *seen, int *status,
	    const char **why)
{
	size_t m = 0, v;

	if (line[0] == ' ' || line[0] == '\t')
		return http_refuse(400, "folded header lines are not taken",
				   status, why);
	if (++seen->headers > HTTP_HEADERS_MAX)
		return http_refuse(431, "too many header lines", status, why);
	while (m < n && http_tchar((unsigned char)line[m]))
		m++;
	if (m == 0 || m >= n || line[m] != ':')
		return http_refuse(400, "a header line is not NAME: VALUE",
				   status, why);
	for (v = m + 1; v < n; v++)
		if (!http_vchar((unsigned char)line[v]))
			return http_refuse(400, "a header value holds a control"
					   " byte", status, why);
	for (v = m + 1; v < n && (line[v] == ' ' || line[v] == '\t'); v++)
		;
	if (m == 4 && strncasecmp(line, "host", 4) == 0)
		seen->hosts++;
	else if (m == 17 && strncasecmp(line, "transfer-encoding", 17) == 0)
		return http_refuse(400, "a request body is not taken",
				   status, why);
	else if (m == 14 && strncasecmp(line, "content-length", 14) == 0) {
		size_t e = n;

		while (e > v && (line[e - 1] == ' ' || line[e - 1] == '\t'))
			e--;
		if (e == v || strspn(line + v, "0") < e - v)
			return http_refuse(400, "a request body is not taken",
					   status, why);
	}
	return HTTP_PARSE_DONE;
}

/* Can line[0..n), a request line not ended yet, still become a good
 * one?  A control byte anywhere, or a method byte that is not a token
 * byte, says no without waiting (a TLS hello, random bytes). */
static bool
http_line_may_be(const char *line, size_t n)
{
	size_t i = 0;

	while (i < n && line[i] != ' ') {
		if (!http_tchar((unsigned char)line[i]))
			return false;
		i++;
	}
	for (; i < n; i++) {
		unsigned char c = (unsigned char)line[i];

		if ((c < 0x20 && c != '\r') || c == 0x7f)
			return false;
	}
	return true;
}

enum http_parse
http_parse_head(const char *data, size_t len, size_t max, struct http_req *req,
		int *status, const char **why)
{
	struct http_seen seen = { 0, 0 };
	size_t pos = 0, scan = len < max ? len : max;
	bool first = true;
	const char *nl;
	enum http_parse r;

	memset(req, 0, sizeof *req);
	while (pos < scan && (data[pos] == '\r' || data[pos] == '\n'))
		pos++; /* empty lines before the request line */
	for (;;) {
		size_t n;

		nl = memchr(data + pos, '\n', scan - pos);
		if (nl == NULL) {
			if (first && !http_line_may_be(data + pos, scan - pos))
				return http_refuse(400, "the request line is not"
						   " METHOD TARGET HTTP/1.1",
						   status, why);
			if (len < max)
				return HTTP_PARSE_MORE;
			return first ? http_refuse(414, "the request line is too"
						   " long", status, why) :
			    http_refuse(431, "the request head is too large",
					status, why);
		}
		n = (size_t)(nl - (data + pos));
		if (n > 0 && data[pos + n - 1] == '\r')
			n--;
		if (memchr(data + pos, '\r', n) != NULL ||
		    memchr(data + pos, '\0', n) != NULL)
			return http_refuse(400, "a bare CR or a NUL in the head",
					   status, why);
		if (first) {
			r = http_request_line(data + pos, n, req, status, why);
			first = false;
		} else if (n == 0) {
			break;
		} else {
			r = http_header(data + pos, n, &seen, status, why);
		}
		if (r != HTTP_PARSE_DONE)
			return r;
		pos = (size_t)(nl - data) + 1;
	}
	if (req->minor == 1 && seen.hosts != 1)
		return http_refuse(400, "an HTTP/1.1 request needs one Host"
				   " header", status, why);
	req->head_len = (size_t)(nl - data) + 1;
	return HTTP_PARSE_DONE;
}

/* The value of a hex digit, or -1. */
static int
http_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
http_query_get(const char *query, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name);
	const char *p = query;

	while (*p != '\0') {
		const char *end = strchr(p, '&');
		size_t n;

		if (end == NULL)
			end = p + strlen(p);
		if ((size_t)(end - p) >= nl && strncmp(p, name, nl) == 0 &&
		    (p[nl] == '=' || p + nl == end)) {
			const char *v = p + nl + (p[nl] == '=' ? 1 : 0);

			for (n = 0; v < end; n++) {
				int c = (unsigned char)*v;

				if (c == '%') {
					if (end - v < 3 || http_hex(v[1]) < 0 ||
					    http_hex(v[2]) < 0)
						return -1;
					c = http_hex(v[1]) * 16 + http_hex(v[2]);
					v += 3;
				} else {
					if (c == '+')
						c = ' ';
					v++;
				}
				if (c < 0x20 || c == 0x7f || n + 1 >= outsz)
					return -1;
				out[n] = (char)c;
			}
			out[n] = '\0';
			return 1;
		}
		p = *end == '&' ? end + 1 : end;
	}
	return 0;
}

void
http_query_put(struct buf *o, const char *value)
{
	for (const unsigned char *v = (const unsigned char *)value; *v; v++)
		if ((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') ||
		    (*v >= '0' && *v <= '9') || strchr("._~:-", *v) != NULL)
			buf_add(o, (const char *)v, 1);
		else
			buf_printf(o, "%%%02X", *v);
}

const char *
http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

void
http_head(struct buf *out, int status, const char *ctype, size_t length)
{
	buf_printf(out, "HTTP/1.1 %d %s\r\n", status, http_reason(status));
	if (ctype != NULL)
		buf_printf(out, "Content-Type: %s\r\n", ctype);
	buf_printf(out, "Content-Length: %zu\r\n", length);
	if (status == 405)
		buf_addstr(out, "Allow: GET, HEAD\r\n");
	buf_addstr(out, "Cache-Control: no-store\r\nConnection: close\r\n\r\n");
}

/* PORT: 0 to 65535, digits only. */
static int
http_port(const char *s, int *port)
{
	long v = 0;

	if (*s == '\0' || strlen(s) > 5 || strspn(s, "0123456789") != strlen(s))
		return -1;
	v = strtol(s, NULL, 10);
	if (v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

int
http_listen_parse(const char *text, char *host, int *port, bool *loopback,
		  const char **why)
{
	static const char *form = "http_listen must be PORT, IPV4:PORT or"
	    " [IPV6]:PORT with a numeric address, for example 127.0.0.1:9187";
	const char *colon;
	unsigned char a[16];
	size_t hl;

	*why = form;
	if (strchr(text, ':') == NULL) {
		snprintf(host, HTTP_HOST_MAX, "127.0.0.1");
		*loopback = true;
		return http_port(text, port);
	}
	if (text[0] == '[') {
		colon = strstr(text, "]:");
		if (colon == NULL)
			return -1;
		hl = (size_t)(colon - text - 1);
		if (hl == 0 || hl >= HTTP_HOST_MAX)
			return -1;
		memcpy(host, text + 1, hl);
		host[hl] = '\0';
		if (inet_pton(AF_INET6, host, a) != 1)
			return -1;
		/* ::1, or an IPv4-mapped loopback (::ffff:127.x.y.z) */
		*loopback = memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16)
		    == 0 || (memcmp(a, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)
			     == 0 && a[12] == 127);
		colon++;
	} else {
		colon = strrchr(text, ':');
		hl = (size_t)(colon - text);
		if (hl == 0 || hl >= HTTP_HOST_MAX)
			return -1;
		memcpy(host, text, hl);
		host[hl] = '\0';
		if (inet_pton(AF_INET, host, a) != 1)
			return -1;
		*loopback = a[0] == 127;
	}
	if (http_port(colon + 1, port) < 0) {
		*why = "the port of http_listen must be a number from 0 to"
		    " 65535";
		return -1;
	}
	return 0;
}
