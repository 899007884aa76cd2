/*
 * memstacks.c - the call stacks of memory_stacks=1 (`weft record --memory=stacks`), for the
 * allocation recorder in memory.c: a frame-pointer walk from the interposed function's frame,
 * written as a STACK record right after the allocation's record (see below).
 */
#include "memwindow.h"
#include "memstacks.h"
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* ---- call stacks (memory_stacks=1) ----
 * A frame-pointer walk from the interposed function's frame: each frame's saved frame pointer
 * and return address, while the frame pointer stays inside the thread's stack, aligned and
 * rising (code built without frame pointers ends the walk early or gives a short stack; it
 * never faults). The stack goes as a STACK record right after the allocation, in the same
 * reservation: word0 its hash, then the return addresses, innermost first; a stack already
 * written in the thread's current chunk is sent as its hash alone (extra 0). */
#define MAX_FRAMES 32
int weft_mem_with_stacks; /* set at start (memory.c) */
static __thread uintptr_t stack_lo WEFT_TLS, stack_hi WEFT_TLS; /* the thread's stack; hi 1: unknown */
static __thread struct stack_seen { uint64_t hash; const char *chunk; } stack_seen[256] WEFT_TLS;

static void thread_stack_bounds(void)
{
	weft_in_runtime++; /* pthread_getattr_np allocates (and reads /proc for the main thread) */
	weft_mem_tls.own++;    /* even in a signal handler inside a record (memnested.c) */
	pthread_attr_t a;
	void *addr;
	size_t size;
	stack_hi = 1;
	if (!pthread_getattr_np(pthread_self(), &a)) {
		if (!pthread_attr_getstack(&a, &addr, &size)) {
			stack_lo = (uintptr_t)addr;
			stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&a);
	}
	weft_mem_tls.own--;
	weft_in_runtime--;
}

/* The allocator's caller, where the allocator keeps no frame pointer (libstdc++'s operator new,
 * most libraries' code): the frame-pointer chain goes from the interposer's frame straight to
 * the frame of the function that called the allocator's caller (or ends, where the library uses
 * the register for data), and the return addresses in between (into the function that called
 * operator new, say) are only on the stack. They are found by scanning that gap, once, at the
 * start of the walk, when the first return address is in another object than the next frame's:
 * a word is a return address when it lies in a loaded object's executable segment (the segments
 * at start, sorted) right after a call instruction; the scan takes those of the first return
 * address's object and ends at the first of another object (the allocator's caller: what is
 * further up is that caller's own locals). x86-64 only; elsewhere the gap is not scanned. */
#define MAX_TEXT 512
static struct text_seg { uintptr_t lo, hi; unsigned obj; } text_segs[MAX_TEXT]; /* written at start */
static unsigned ntext_segs, nobjs;

#if defined(__x86_64__)
static int add_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	nobjs++;
	for (unsigned i = 0; i < info->dlpi_phnum && ntext_segs < MAX_TEXT; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_memsz) {
			uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
			unsigned k = ntext_segs++;
			for (; k && text_segs[k - 1].lo > lo; k--) /* kept sorted */
				text_segs[k] = text_segs[k - 1];
			text_segs[k] = (struct text_seg){lo, lo + ph->p_memsz, nobjs};
		}
	}
	return 0;
}

void weft_mem_find_text(void)
{
	dl_iterate_phdr(add_text, NULL);
}

/* The object (1...) whose executable segment holds w, or 0. */
static unsigned text_object(uintptr_t w)
{
	unsigned lo = 0, hi = ntext_segs;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (text_segs[mid].hi <= w)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ntext_segs && w >= text_segs[lo].lo + 7 && w <= text_segs[lo].hi ? text_segs[lo].obj : 0;
}

/* Is w, in an executable segment, right after a call (e8 rel32; ff /2 with a register, a memory
 * operand with disp8 or disp32, or rip-relative)? */
static int after_call(uintptr_t w)
{
	const unsigned char *c = (const unsigned char *)w;
	return c[-5] == 0xe8 || (c[-2] == 0xff && ((c[-1] & 0xf8) == 0xd0 || ((c[-1] & 0xf8) == 0x10 &&
		c[-1] != 0x14 && c[-1] != 0x15))) || (c[-3] == 0xff && (c[-2] & 0xf8) == 0x50) ||
		(c[-6] == 0xff && (c[-5] == 0x15 || (c[-5] & 0xf8) == 0x90));
}

/* The return addresses in [lo, hi) (at most 64 words), innermost first, at most max: those into
 * object `from`, then the first into another one; none when there is no such other one. */
static unsigned scan_gap(uintptr_t lo, uintptr_t hi, unsigned from, uint64_t *pcs, unsigned max)
{
	unsigned n = 0;
	if (hi > lo + 64 * 8)
		hi = lo + 64 * 8;
	for (uintptr_t a = lo; a + 8 <= hi && n < max; a += 8) {
		uintptr_t w = *(const uintptr_t *)a;
		unsigned obj = text_object(w);
		if (!obj || !after_call(w))
			continue;
		pcs[n++] = w;
		if (obj != from)
			return n;
	}
	return 0;
}

/* The gap after the interposer's frame at fp, whose saved frame pointer is next (0: not a frame). */
static unsigned first_gap(uintptr_t fp, uintptr_t next, uintptr_t hi, uint64_t *pcs, unsigned max)
{
	const uintptr_t *f = (const uintptr_t *)fp;
	unsigned from = text_object(f[1]);
	if (!from || (next && text_object(((const uintptr_t *)next)[1]) == from))
		return 0; /* the caller kept its frame: nothing is missing */
	return scan_gap(fp + 16, next ? next : hi, from, pcs, max);
}
#else
void weft_mem_find_text(void) {}
static unsigned first_gap(uintptr_t fp, uintptr_t next, uintptr_t hi, uint64_t *pcs, unsigned max)
{
	(void)fp, (void)next, (void)hi, (void)pcs, (void)max;
	return 0;
}
#endif

/* A frame at v: inside the thread's stack with room for its two words, aligned (no overflow:
 * a saved frame pointer can be any value where a function used the register for data, as a
 * signal handler's caller built without frame pointers does). */
static inline int frame_ok(uintptr_t v, uintptr_t lo, uintptr_t hi)
{
	return v >= lo && hi >= 16 && v <= hi - 16 && !(v & 7);
}

static unsigned walk_stack(void *frame, uint64_t *pcs)
{
	if (__builtin_expect(!stack_hi, 0))
		thread_stack_bounds();
	uintptr_t fp = (uintptr_t)frame, lo = stack_lo, hi = stack_hi;
	unsigned n = 0;
	while (n < MAX_FRAMES && frame_ok(fp, lo, hi)) {
		const uintptr_t *f = (const uintptr_t *)fp;
		if (!f[1])
			break;
		pcs[n++] = f[1];
		uintptr_t next = f[0] > fp && frame_ok(f[0], lo, hi) ? f[0] : 0;
		if (n == 1 && ntext_segs) {
			unsigned k = first_gap(fp, next, hi, pcs + n, MAX_FRAMES - n);
			n += k;
			if (k && !next)
				break; /* the rest of the stack is not known */
		}
		if (!next)
			break;
		fp = next;
	}
	return n;
}

static uint64_t stack_hash(const uint64_t *pcs, unsigned n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (unsigned i = 0; i < n; i++) {
		h ^= pcs[i];
		h *= 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	return h | 1;
}

/* An allocation record (ALLOC, or REALLOC when old is set) followed by its STACK record. */
static unsigned alloc_words(uint64_t *w, uint64_t t, unsigned fn, const void *old, const void *p, size_t n)
{
	w[0] = t;
	if (old) {
		w[1] = weft__hdr(0, WEFT_R_REALLOC, 3, fn);
		w[2] = (uint64_t)(uintptr_t)old;
		w[3] = (uint64_t)(uintptr_t)p;
		w[4] = n;
		return 5;
	}
	w[1] = weft__hdr(0, WEFT_R_ALLOC, 2, fn);
	w[2] = (uint64_t)(uintptr_t)p;
	w[3] = n;
	return 4;
}

void weft_mem_put_with_stack(uint64_t t, unsigned fn, const void *old, const void *p, size_t n, void *frame)
{
	uint64_t pcs[MAX_FRAMES];
	unsigned nf = walk_stack(frame, pcs);
	uint64_t h = stack_hash(pcs, nf);
	if (__builtin_expect(weft__tls.busy, 0)) { /* a handler's, inside another record: queued whole */
		uint64_t v[5 + 2 + MAX_FRAMES];
		unsigned head = alloc_words(v, t, fn, old, p, n);
		v[head] = h;
		v[head + 1] = weft__hdr(0, WEFT_R_STACK, nf, 0);
		memcpy(v + head + 2, pcs, nf * 8);
		weft_mem_stash(v, head + 2 + nf);
		return;
	}
	if (__builtin_expect(weft_mem_tls.pend_head != weft_mem_tls.pend_tail, 0))
		weft_mem_flush();
	unsigned head = old ? 5 : 4;
	uint64_t *w = weft_mem_open((head + 2 + nf) * 8);
	if (__builtin_expect(w != 0, 1)) {
		alloc_words(w, t, fn, old, p, n);
		struct stack_seen *seen = &stack_seen[h & 255];
		int known = seen->hash == h && seen->chunk == weft__tls.start; /* the window is open: start is this chunk's */
		w[head] = h;
		w[head + 1] = weft__hdr(0, WEFT_R_STACK, known ? 0 : nf, 0);
		if (!known) {
			memcpy(w + head + 2, pcs, nf * 8);
			seen->hash = h;
			seen->chunk = weft__tls.start;
		}
		weft__commit(w + head + 2 + (known ? 0 : nf));
	}
	weft_mem_after();
}

