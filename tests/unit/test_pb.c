/* Protobuf primitives against bytes worked out from the encoding rules. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include "export/pb.h"

static void varints(void **s)
{
	(void)s;
	struct pb b = {0};
	pb_varint(&b, 1, 300);        /* tag 0x08, 300 = ac 02 */
	pb_varint(&b, 2, 0);          /* 10 00 */
	pb_varint(&b, 3, UINT64_MAX); /* 18 ff*9 01 */
	const uint8_t want[] = {0x08, 0xac, 0x02, 0x10, 0x00, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff,
				0xff, 0xff, 0xff, 0xff, 0x01};
	assert_int_equal(b.n, sizeof(want));
	assert_memory_equal(b.p, want, sizeof(want));
	free(b.p);
}

static void fixed_and_strings(void **s)
{
	(void)s;
	struct pb b = {0};
	pb_fixed64(&b, 47, 0x0102030405060708ull); /* field 47 wire 1: varint(377) = f9 02 */
	pb_string(&b, 2, "ab");
	const uint8_t want[] = {0xf9, 0x02, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
				0x12, 0x02, 'a', 'b'};
	assert_int_equal(b.n, sizeof(want));
	assert_memory_equal(b.p, want, sizeof(want));
	free(b.p);
}

static void nested_lengths(void **s)
{
	(void)s;
	struct pb b = {0};
	size_t at = pb_begin(&b, 1);
	for (int i = 0; i < 200; i++)
		pb_varint(&b, 1, 1); /* 400 bytes */
	pb_end(&b, at);
	/* tag 0x0a, then 400 as a 4-byte redundant varint: 0x90 0x83 0x80 0x00 */
	const uint8_t head[] = {0x0a, 0x90, 0x83, 0x80, 0x00};
	assert_memory_equal(b.p, head, sizeof(head));
	assert_int_equal(b.n, 5 + 400);
	free(b.p);
}

static void short_nested_is_minimal(void **s)
{
	(void)s;
	struct pb b = {0};
	size_t outer = pb_begin(&b, 1);
	size_t inner = pb_begin(&b, 11);
	pb_varint(&b, 9, 1);
	pb_end(&b, inner);
	pb_end(&b, outer);
	const uint8_t want[] = {0x0a, 0x04, 0x5a, 0x02, 0x48, 0x01};
	assert_int_equal(b.n, sizeof(want));
	assert_memory_equal(b.p, want, sizeof(want));
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(varints), cmocka_unit_test(fixed_and_strings),
		cmocka_unit_test(nested_lengths), cmocka_unit_test(short_nested_is_minimal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
