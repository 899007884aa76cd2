/* floor_preload.c - the floor of an allocation interposer, for bench/memory/run.sh: malloc and
 * free wrappers that call glibc's own entry points and append a 32-byte record (rdtsc, kind,
 * address, size) to an initial-exec thread-local ring, nothing else (no off switch, no
 * recursion guard, no writer). What any LD_PRELOAD tracer pays at least.
 * Build: gcc -O2 -shared -fPIC [-DRING_BIG] floor_preload.c -o floor_preload.so */
#include <stddef.h>
#include <stdint.h>
#include <x86intrin.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

#ifdef RING_BIG
#define RING (1 << 21) /* records (64 MiB): every record a new line of memory, as in a tracer */
#else
#define RING 4096 /* records (128 KiB): stays in cache */
#endif
static __thread uint64_t ring[RING][4] __attribute__((tls_model("initial-exec")));
static __thread unsigned at __attribute__((tls_model("initial-exec")));

static inline void put(uint64_t kind, const void *p, size_t n)
{
	uint64_t *r = ring[at++ & (RING - 1)];
	r[0] = __rdtsc();
	r[1] = kind;
	r[2] = (uint64_t)(uintptr_t)p;
	r[3] = n;
}

void *malloc(size_t n)
{
	void *p = __libc_malloc(n);
	put(1, p, n);
	return p;
}

void free(void *p)
{
	put(2, p, 0);
	__libc_free(p);
}
