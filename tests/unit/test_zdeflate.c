/* The .pftrace's zlib compressor (src/export/zdeflate.h), built once with this build's engine
 * and once with libdeflate: every stream it makes inflates, with libdeflate's decompressor (an
 * implementation of its own), to exactly the input; packet-like data shrinks; data that does
 * not shrink either fits the bound or is refused (0: written plain), never truncated. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <libdeflate.h>
#include "export/zdeflate.h"

/* compresses in[0..n), checks the round trip; returns the compressed size (0: refused) */
static size_t round_trip(const uint8_t *in, size_t n)
{
	struct weft_zdeflate *z = weft_zdeflate_new();
	assert_non_null(z);
	size_t cap = weft_zdeflate_bound(z, n);
	assert_true(cap >= n);
	uint8_t *out = malloc(cap), *back = malloc(n + 1);
	assert_non_null(out);
	assert_non_null(back);
	size_t zn = weft_zdeflate(z, in, n, out, cap);
	if (zn) {
		assert_true(zn <= cap);
		assert_int_equal(out[0] & 0x0f, 8); /* zlib header: CM = deflate */
		assert_int_equal(((unsigned)out[0] << 8 | out[1]) % 31, 0);
		struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
		size_t got = 0;
		assert_int_equal(libdeflate_zlib_decompress(d, out, zn, back, n + 1, &got), LIBDEFLATE_SUCCESS);
		assert_int_equal(got, n);
		if (n)
			assert_memory_equal(back, in, n);
		libdeflate_free_decompressor(d);
		/* the same input, the same bytes: again, after other input (a compressor's tables
		 * must not carry over from one batch to the next), and with a new compressor */
		uint8_t *again = malloc(cap), *other = malloc(n + 1);
		for (size_t i = 0; i <= n; i++)
			other[i] = (uint8_t)(i * 2654435761u >> 13);
		size_t ocap = weft_zdeflate_bound(z, n + 1);
		uint8_t *oz = malloc(ocap);
		weft_zdeflate(z, other, n + 1, oz, ocap);
		assert_int_equal(weft_zdeflate(z, in, n, again, cap), zn);
		assert_memory_equal(again, out, zn);
		struct weft_zdeflate *z2 = weft_zdeflate_new();
		assert_int_equal(weft_zdeflate(z2, in, n, again, cap), zn);
		assert_memory_equal(again, out, zn);
		weft_zdeflate_free(z2);
		free(oz);
		free(other);
		free(again);
	}
	free(out);
	free(back);
	weft_zdeflate_free(z);
	return zn;
}

/* 1 MiB of TrackEvent-like packets: begin/end pairs with small varying deltas and names */
static void packets_shrink(void **s)
{
	(void)s;
	size_t n = 1 << 20;
	uint8_t *p = malloc(n);
	uint32_t x = 12345;
	for (size_t i = 0; i + 12 <= n; i += 12) {
		x = x * 1103515245u + 12345u;
		const uint8_t pk[12] = {0x0a, 0x0a, 0x40, (uint8_t)(0x10 + (x >> 28)), 0x50, 0x02, 0x5a, 0x04,
					0x48, (uint8_t)(1 + (i / 12) % 2), 0x50, (uint8_t)(0x0b + (x >> 30))};
		memcpy(p + i, pk, 12);
	}
	memset(p + n - n % 12, 0, n % 12);
	size_t zn = round_trip(p, n);
	assert_true(zn > 0);
	assert_true(zn < n / 3);
	free(p);
}

/* incompressible bytes: a stream that inflates exactly, or 0, never a cut-off one */
static void random_bytes(void **s)
{
	(void)s;
	size_t n = (1 << 20) + 7;
	uint8_t *p = malloc(n);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (uint8_t)(x >> 24);
	}
	round_trip(p, n);
	free(p);
}

static void tiny_and_empty(void **s)
{
	(void)s;
	const uint8_t one[1] = {0x42};
	assert_true(round_trip(one, 1) > 0);
	assert_true(round_trip(one, 0) > 0); /* an empty stream is still a stream */
}

/* too small an output: refused, and nothing beyond it written */
static void no_room(void **s)
{
	(void)s;
	uint8_t in[4096], out[64 + 16];
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7919u >> 3);
	memset(out, 0xa5, sizeof(out));
	struct weft_zdeflate *z = weft_zdeflate_new();
	assert_int_equal(weft_zdeflate(z, in, sizeof(in), out, 64), 0);
	for (size_t i = 64; i < sizeof(out); i++)
		assert_int_equal(out[i], 0xa5);
	weft_zdeflate_free(z);
}

static void engine_named(void **s)
{
	(void)s;
#ifdef WEFT_HAVE_ISAL
	assert_string_equal(weft_zdeflate_engine(), "isa-l level 2");
#else
	assert_string_equal(weft_zdeflate_engine(), "libdeflate level 1");
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(packets_shrink), cmocka_unit_test(random_bytes),
		cmocka_unit_test(tiny_and_empty), cmocka_unit_test(no_room), cmocka_unit_test(engine_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
