/*
 * rtalloc.c - the runtime's own allocator. In libweft-preload.so every call the runtime's code
 * makes to malloc, calloc, realloc, free, strdup, posix_memalign or aligned_alloc is linked here
 * (-Wl,--wrap=NAME turns the reference into __wrap_NAME), never to the malloc the program sees:
 * a program that defines its own (a fixed arena, a debugging allocator, or one with its own
 * locks) is never entered from weft, and weft's event buffers never take the program's memory.
 * The interposer's own malloc (memory.c) is a definition, not a reference: it is not wrapped.
 * What glibc and the libraries weft uses allocate for it inside their own code (libelf, zstd's
 * contexts, a thread's TLS at pthread_create, stdio's buffers) still goes to the program's malloc.
 *
 * Blocks of up to 64 KiB come from power-of-two size classes (32 bytes up) carved out of 1 MiB
 * mmap'd slabs, with a free list per class (slabs are never given back: the runtime's small
 * blocks are few and long-lived); larger ones are each their own mapping, unmapped at free.
 * Each block has 16 bytes before it: its class (or BIG), the distance back to the start of its
 * slot or mapping (the padding an alignment needed) and the slot's or mapping's size. One
 * spinlock guards the classes (the runtime allocates rarely: thread start, a buffer switch,
 * registering a name); a fork takes it in prepare so a child never inherits it held by a
 * thread that is gone.
 * Sanitizer builds leave this out (their own malloc checks the runtime too).
 */
#include "lib/internal.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NCLASS 12                  /* 32 B << 0..11: up to 64 KiB */
#define SLAB (1u << 20)
#define BIG 0xffffu

struct rt_head {
	uint32_t cls;  /* size class, or BIG: its own mapping */
	uint32_t back; /* bytes from the slot's (mapping's) start to the block */
	uint64_t size; /* the slot's (mapping's) size */
};

struct rt_free { struct rt_free *next; };

/* Guarded by the lock: the free lists and the slab being carved. */
static struct rt_free *free_list[NCLASS];
static char *slab_pos, *slab_end;

/* The lock: a spinlock its owner may take again (the fork handlers: see rt_prepare). owner is
 * the address of the holding thread's tag, 0 when free; depth is written by the owner only. */
static _Atomic uintptr_t owner;
static unsigned depth;
static __thread char tag WEFT_TLS; /* its address tells the threads apart */

static void rt_lock(void)
{
	uintptr_t me = (uintptr_t)&tag, free_ = 0;
	if (atomic_load_explicit(&owner, memory_order_relaxed) == me) {
		depth++;
		return;
	}
	while (!atomic_compare_exchange_weak_explicit(&owner, &free_, me, memory_order_acquire, memory_order_relaxed))
		free_ = 0;
	depth = 1;
}

static void rt_unlock(void)
{
	if (--depth == 0)
		atomic_store_explicit(&owner, 0, memory_order_release);
}

static void *map(size_t n)
{
	void *p = (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* A block of n bytes aligned to align (a power of two, at least 16). */
static void *rt_alloc(size_t n, size_t align, int zero)
{
	size_t pad = align > 16 ? align : 16;
	if (n > SIZE_MAX - 2 * pad - 4096) {
		errno = ENOMEM;
		return NULL;
	}
	size_t need = n + pad + (align > 16 ? align : 0); /* room to round the block up to align */
	char *slot;
	uint32_t cls = 0;
	uint64_t size;
	while (cls < NCLASS && ((size_t)32 << cls) < need)
		cls++;
	if (cls == NCLASS || pad > 4096) { /* its own mapping: page-aligned, zeroed */
		cls = BIG;
		size = (need + 4095) & ~(size_t)4095;
		if (!(slot = map(size))) {
			errno = ENOMEM;
			return NULL;
		}
		zero = 0;
	} else {
		size = (size_t)32 << cls;
		rt_lock();
		if (free_list[cls]) {
			slot = (char *)free_list[cls];
			free_list[cls] = free_list[cls]->next;
		} else {
			if (!slab_pos || (size_t)(slab_end - slab_pos) < size) {
				char *s = map(SLAB); /* the old slab's tail is left: at most 64 KiB */
				if (!s) {
					rt_unlock();
					errno = ENOMEM;
					return NULL;
				}
				slab_pos = s;
				slab_end = s + SLAB;
			}
			slot = slab_pos; /* 32-byte aligned: every size is a multiple of 32 */
			slab_pos += size;
		}
		rt_unlock();
	}
	char *p = slot + pad; /* at least 16 bytes in: room for the header */
	if ((uintptr_t)p & (align - 1))
		p = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	struct rt_head h = {cls, (uint32_t)(p - slot), size};
	memcpy(p - sizeof(h), &h, sizeof(h));
	if (zero)
		memset(p, 0, n);
	return p;
}

static struct rt_head head_of(const void *p)
{
	struct rt_head h;
	memcpy(&h, (const char *)p - sizeof(h), sizeof(h));
	return h;
}

void __wrap_free(void *p);
void __wrap_free(void *p)
{
	if (!p)
		return;
	struct rt_head h = head_of(p);
	char *slot = (char *)p - h.back;
	if (h.cls == BIG) {
		syscall(SYS_munmap, slot, (size_t)h.size);
		return;
	}
	if (h.cls >= NCLASS)
		return; /* not one of ours: cannot be, left alone */
	rt_lock();
	((struct rt_free *)slot)->next = free_list[h.cls];
	free_list[h.cls] = (struct rt_free *)slot;
	rt_unlock();
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
	return rt_alloc(n, 16, 0);
}

void *__wrap_calloc(size_t k, size_t n);
void *__wrap_calloc(size_t k, size_t n)
{
	size_t b;
	if (__builtin_mul_overflow(k, n, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	return rt_alloc(b, 16, 1);
}

void *__wrap_realloc(void *old, size_t n);
void *__wrap_realloc(void *old, size_t n)
{
	if (!old)
		return rt_alloc(n, 16, 0);
	if (!n) {
		__wrap_free(old);
		return NULL;
	}
	struct rt_head h = head_of(old);
	size_t have = (size_t)h.size - h.back;
	if (n <= have && (h.cls == BIG || n > have / 2))
		return old;
	void *p = rt_alloc(n, 16, 0);
	if (p) {
		memcpy(p, old, have < n ? have : n);
		__wrap_free(old);
	}
	return p;
}

int __wrap_posix_memalign(void **out, size_t align, size_t n);
int __wrap_posix_memalign(void **out, size_t align, size_t n)
{
	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	void *p = rt_alloc(n, align < 16 ? 16 : align, 0);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *__wrap_aligned_alloc(size_t align, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n)
{
	if (!align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return rt_alloc(n, align < 16 ? 16 : align, 0);
}

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = rt_alloc(n, 16, 0);
	if (p)
		memcpy(p, s, n);
	return p;
}

/* fork: the forking thread holds the lock across it, so the child gets the lists whole. The
 * other fork handlers may allocate on that thread, before or after these run (their order is
 * the order of registration): the owner takes the lock again. */
static void rt_prepare(void) { rt_lock(); }
static void rt_parent(void) { rt_unlock(); }
static void rt_child(void)
{
	depth = 0;
	atomic_store_explicit(&owner, 0, memory_order_relaxed); /* only this thread is left */
}

/* Registered before the runtime's own handlers (preload_init is constructor 101), so this
 * prepare runs after theirs: the runtime's locks are taken before this one at a fork, as
 * everywhere else (a thread holding one of them may be waiting for this one). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wprio-ctor-dtor"
__attribute__((constructor(100))) static void rt_init(void)
{
	pthread_atfork(rt_prepare, rt_parent, rt_child);
}
#pragma GCC diagnostic pop
