/*
 * cstack.c - stack segments for the frame-evaluation hook (see cstack.h for why).
 *
 * Each thread learns its stack's lowest address once (pthread_getattr_np, at its first
 * check) and keeps a floor RESERVE above it: a frame entered below the floor is run on a
 * segment, a private anonymous mapping of SEG_SIZE bytes (reserved, not committed: pages come
 * as the stack reaches them) with an inaccessible guard at its low end, made with the system
 * call itself so that weft's own memory recorder does not take it for the program's. On a
 * segment the floor is the segment's, so a deeper recursion moves on to the next one: the
 * segments of a thread form a chain, each kept when its call returns (a recursion that goes
 * back and forth across a boundary makes no system call), the one above it given back then
 * (so at most one unused segment stays mapped), all of them at the thread's exit.
 *
 * The move itself (pw_cstack_call, below) is a few instructions per architecture: save the
 * frame pointer, point the stack pointer at the segment's top, call, restore. Its call-frame
 * information describes the caller through the saved frame pointer, so debuggers and
 * unwinders walk from a segment back onto the thread's stack. Elsewhere than x86-64 and
 * AArch64 nothing moves (the floor is 0): deep recursion under the hook is as it was.
 * Under AddressSanitizer each move is announced as a fiber switch.
 *
 * All state is per thread (TLS), written by its own thread; the only global is the
 * pthread key that frees a thread's segments, made once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cstack.h"
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define ASAN_FIBERS 1
#else
#define ASAN_FIBERS 0
#endif

#if defined(__x86_64__) || defined(__aarch64__)
#define CAN_MOVE 1
#else
#define CAN_MOVE 0
#endif

#define RESERVE (256u << 10) /* room kept below the floor: a frame's C calls, signal handlers */
#define SEG_SIZE (8u << 20)  /* a segment, guard included (as a thread's default stack) */
#define GUARD (64u << 10)    /* its inaccessible low end */

__thread uintptr_t pw_cstack_nfloor __attribute__((tls_model("initial-exec")));

struct seg {
	struct seg *up; /* the next segment of the chain (kept for reuse), or NULL */
	char *base;     /* the mapping: SEG_SIZE bytes, this header at its top */
};
/* The segment the thread runs on (NULL: its own stack) and the first of its chain. */
static __thread struct seg *cur, *first;
static pthread_key_t seg_key; /* its value: `first`, so that the thread's exit unmaps the chain */
static pthread_once_t seg_key_once = PTHREAD_ONCE_INIT;

/* void pw_cstack_call(void *arg, void (*fn)(void *), void *top): fn(arg) with the stack
 * pointer at top (16-byte aligned); returns on the caller's stack. */
void pw_cstack_call(void *arg, void (*fn)(void *), void *top) __attribute__((visibility("hidden")));
#if defined(__x86_64__)
__asm__(".text\n"
	".globl pw_cstack_call\n"
	".type pw_cstack_call, @function\n"
	".p2align 4\n"
	"pw_cstack_call:\n"
	".cfi_startproc\n"
	"	endbr64\n"
	"	pushq %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"	movq %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"	movq %rdx, %rsp\n"
	"	callq *%rsi\n"
	"	movq %rbp, %rsp\n"
	"	popq %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size pw_cstack_call, .-pw_cstack_call\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl pw_cstack_call\n"
	".type pw_cstack_call, %function\n"
	".p2align 2\n"
	"pw_cstack_call:\n"
	".cfi_startproc\n"
	"	stp x29, x30, [sp, #-16]!\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset x29, -16\n"
	".cfi_offset x30, -8\n"
	"	mov x29, sp\n"
	".cfi_def_cfa_register x29\n"
	"	mov sp, x2\n"
	"	blr x1\n"
	"	mov sp, x29\n"
	".cfi_def_cfa sp, 16\n"
	"	ldp x29, x30, [sp], #16\n"
	".cfi_def_cfa_offset 0\n"
	".cfi_restore x29\n"
	".cfi_restore x30\n"
	"	ret\n"
	".cfi_endproc\n"
	".size pw_cstack_call, .-pw_cstack_call\n");
#endif

static void seg_free(struct seg *s)
{
	syscall(SYS_munmap, s->base, (size_t)SEG_SIZE);
}

/* A thread's exit: its whole chain (it runs on its own stack by then). */
static void seg_free_chain(void *p)
{
	for (struct seg *s = p, *up; s; s = up) {
		up = s->up;
		seg_free(s);
	}
}

static void seg_key_make(void)
{
	if (pthread_key_create(&seg_key, seg_free_chain))
		seg_key = (pthread_key_t)-1;
}

static struct seg *seg_new(void)
{
	long m = syscall(SYS_mmap, NULL, (size_t)SEG_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (m == -1 || (unsigned long)m > -4096ul)
		return NULL;
	char *base = (char *)m;
	syscall(SYS_mprotect, base, (size_t)GUARD, PROT_NONE);
	struct seg *s = (struct seg *)(base + SEG_SIZE - sizeof(struct seg));
	s->up = NULL;
	s->base = base;
	return s;
}

/* The floor a poke took away (to give back at the next check), and whether one did. */
static __thread uintptr_t poked_nfloor;
static __thread int poked;

void pw_cstack_poke(void)
{
	if (!poked) {
		poked_nfloor = pw_cstack_nfloor;
		poked = 1;
	}
	pw_cstack_nfloor = 0;
}

int pw_cstack_must_move(void)
{
	if (poked) {
		pw_cstack_nfloor = poked_nfloor;
		poked = 0;
	}
	if (!pw_cstack_nfloor) {
		uintptr_t floor = 0;
#if CAN_MOVE
		pthread_attr_t a;
		void *lo;
		size_t size;
		if (pthread_getattr_np(pthread_self(), &a) == 0) {
			if (pthread_attr_getstack(&a, &lo, &size) == 0)
				floor = (uintptr_t)lo + RESERVE;
			pthread_attr_destroy(&a);
		}
#endif
		pw_cstack_nfloor = ~floor;
	}
	return pw_cstack_short();
}

struct hop {
	void (*fn)(void *);
	void *arg;
	const void *from_lo; /* the stack left (for AddressSanitizer) */
	size_t from_size;
};

/* The first and last code on a segment. */
static void hop_run(void *p)
{
	struct hop *h = p;
#if ASAN_FIBERS
	__sanitizer_finish_switch_fiber(NULL, &h->from_lo, &h->from_size);
#endif
	h->fn(h->arg);
#if ASAN_FIBERS
	__sanitizer_start_switch_fiber(NULL, h->from_lo, h->from_size);
#endif
}

void pw_cstack_run(void (*fn)(void *), void *arg)
{
#if CAN_MOVE
	struct seg *s = cur ? cur->up : first;
	if (!s && (s = seg_new()) != NULL) {
		if (cur) {
			cur->up = s;
		} else {
			first = s;
			pthread_once(&seg_key_once, seg_key_make);
			if (seg_key != (pthread_key_t)-1)
				pthread_setspecific(seg_key, s);
		}
	}
	if (s) {
		struct seg *below = cur;
		uintptr_t nfloor = pw_cstack_nfloor;
		struct hop h = {fn, arg, NULL, 0};
		cur = s;
		pw_cstack_nfloor = ~((uintptr_t)s->base + GUARD + RESERVE);
#if ASAN_FIBERS
		void *fake = NULL;
		__sanitizer_start_switch_fiber(&fake, s->base + GUARD, (size_t)((char *)s - s->base - GUARD));
#endif
		pw_cstack_call(&h, hop_run, (void *)((uintptr_t)s & ~(uintptr_t)15));
#if ASAN_FIBERS
		__sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
		cur = below;
		if (poked) /* a poke made on the segment still holds, for the stack below */
			poked_nfloor = nfloor;
		else
			pw_cstack_nfloor = nfloor;
		if (s->up) { /* keep this one for the next time, not the one above it */
			seg_free(s->up);
			s->up = NULL;
		}
		return;
	}
#endif
	fn(arg);
}
