/* phases.c - a program whose C heap goes through known phases, each held for 40 ms, for the
 * stacked heap picture (`weft plot heap`; tests/integration/test_export.py). Built with
 * -finstrument-functions: each function is a slice, and a block belongs to the function that
 * called malloc (the innermost slice).
 *   1. alloc_a: 6 x 1 MiB                      live: A 6 MiB
 *   2. alloc_b: 3 x 1 MiB                      live: A 6 + B 3 = 9 MiB (the peak)
 *   3. free_a frees A's blocks                 live: B 3 MiB
 *   4. outer_c: 1 x 1 MiB, then inner_c (called by it): 2 x 1 MiB
 *                                              live: B 3 + inner_c 2 + outer_c 1 = 6 MiB
 *   5. free_all                                live: 0
 * Throughout, early_block (a constructor, not instrumented: outside any slice) holds 512 KiB.
 * The rest are the C library's own few small blocks. */
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define MIB (1u << 20)

void *volatile phases_a[6], *volatile phases_b[3], *volatile phases_c[3], *volatile phases_early;

__attribute__((constructor, no_instrument_function)) static void early_block(void)
{
	phases_early = malloc(512u << 10);
}

static void hold(void)
{
	struct timespec ts = {0, 40 * 1000 * 1000};
	while (nanosleep(&ts, &ts))
		;
}

NOINLINE void alloc_a(void)
{
	for (int i = 0; i < 6; i++)
		phases_a[i] = malloc(MIB);
}

NOINLINE void alloc_b(void)
{
	for (int i = 0; i < 3; i++)
		phases_b[i] = malloc(MIB);
}

NOINLINE void free_a(void)
{
	for (int i = 0; i < 6; i++)
		free(phases_a[i]);
}

NOINLINE void inner_c(void)
{
	phases_c[1] = malloc(MIB);
	phases_c[2] = malloc(MIB);
}

NOINLINE void outer_c(void)
{
	phases_c[0] = malloc(MIB);
	inner_c();
}

NOINLINE void free_all(void)
{
	for (int i = 0; i < 3; i++) {
		free(phases_b[i]);
		free(phases_c[i]);
	}
}

int main(void)
{
	alloc_a();
	hold();
	alloc_b();
	hold();
	free_a();
	hold();
	outer_c();
	hold();
	free_all();
	hold();
	return phases_early ? 0 : 1;
}
