/*
 * fuzz_tz.c - libFuzzer target: tz_parse() over arbitrary bytes (RFC 8536
 * TZif files: headers, counts, tables, the footer's TZ rule) and the
 * conversions over any zone it accepts.
 *
 * Invariants (FUZZ_CHECK traps when one breaks):
 *  - a refusal is one line and leaves no zone; parsing reads nothing
 *    outside the input (ASan);
 *  - an accepted zone's offsets are within +-26 hours;
 *  - hour cells: an instant lies in its cell, [start(c), start(c + 1)),
 *    and a cell lasts at most an hour;
 *  - tz_wall_first(w) is the first instant whose wall clock reads w or
 *    later: its wall clock does, the instant before's does not.
 * The instants tried come from the input's last 16 bytes, and the edges
 * of the years 1900, 2038 and 9999.
 */
#include "fuzz.h"

#include "calendar.h"
#include "tz.h"

#define OFF_MAX (26 * 3600)

/* Check the conversions of z around instant t. */
static void
fuzz_tz_at(const struct tz *z, int64_t t)
{
	int32_t off = tz_offset(z, t);
	int64_t c = tz_cell_of(z, t), s, e, w;

	FUZZ_CHECK(off >= -OFF_MAX && off <= OFF_MAX);
	s = tz_cell_start(z, c);
	e = tz_cell_start(z, c + 1);
	FUZZ_CHECK(s <= t && t < e);
	FUZZ_CHECK(e - s <= 3600);
	w = tz_wall_first(z, t + off);
	FUZZ_CHECK(w <= t);
	FUZZ_CHECK(w + tz_offset(z, w) >= t + off);
	FUZZ_CHECK(w - 1 + tz_offset(z, w - 1) < t + off);
}

/* libFuzzer's entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t edges[] = { -2208988800LL, 2147483647LL,
		2147483648LL, 253402214400LL };
	unsigned char *copy = malloc(size + 1);
	struct tz *z = NULL;
	struct err err;

	memcpy(copy, data, size);
	if (tz_parse("Fuzz/Zone", copy, size, &z, &err) == -1) {
		FUZZ_CHECK(z == NULL);
		FUZZ_CHECK(fuzz_one_line(err.msg));
		free(copy);
		return 0;
	}
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
		fuzz_tz_at(z, edges[i]);
		fuzz_tz_at(z, edges[i] - 1);
	}
	if (size >= 16) {
		int64_t t;

		memcpy(&t, data + size - 16, sizeof t);
		/* within the years 0001..9999 */
		t = (int64_t)((uint64_t)t % 315537897600ULL) - 62135596800LL;
		fuzz_tz_at(z, t);
	}
	tz_unref(z);
	free(copy);
	return 0;
}
