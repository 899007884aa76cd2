/*
 * allocloop.c - the program bench/rss/run.sh records: N memory records (allocations and frees,
 * half each) with a bounded live set of 4096 blocks, sizes 16..4111 bytes, so the trace grows
 * with N while what is live at any moment does not. Usage: allocloop RECORDS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define LIVE 4096

int main(int argc, char **argv)
{
	uint64_t records = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	static void *slot[LIVE];
	uint64_t x = 88172645463325252ull, sum = 0;
	for (uint64_t i = 0; i < records / 2; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: sizes and slots */
		size_t k = (size_t)(x % LIVE);
		free(slot[k]);
		slot[k] = malloc(16 + (size_t)((x >> 20) % 4096));
		sum += (uintptr_t)slot[k] & 0xff;
	}
	for (size_t k = 0; k < LIVE / 2; k++) /* half stays live: leaks to report */
		free(slot[k]);
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}
