/*
 * memory-stacks.c - the stacks the memory analysis charges blocks to (memory-internal.h).
 * A slice stack is interned per process: (parent stack, innermost site) -> id, 0 the empty
 * stack. With memory_stacks, each distinct call stack a record carries (by hash) is kept once
 * while the process is scanned, then named by the process's symbols and interned the same way
 * as a stack of function frames, the allocator's own innermost frames left out.
 */
#include "analysis/memory-internal.h"
#include "format/symbols.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROW MEM_GROW

struct mem_frames *weft_mem__frames(struct mem_frame_map *m, uint64_t hash, int add)
{
	if (add && (m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct mem_frames *ne = calloc(cap, sizeof(*ne));
		if (!ne)
			weft_oom("the memory analysis");
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->e[i].hash)
				continue;
			size_t h = (size_t)(m->e[i].hash >> 7) & (cap - 1);
			while (ne[h].hash)
				h = (h + 1) & (cap - 1);
			ne[h] = m->e[i];
		}
		free(m->e);
		m->e = ne;
		m->cap = cap;
	}
	if (!m->cap)
		return NULL;
	size_t h = (size_t)(hash >> 7) & (m->cap - 1);
	while (m->e[h].hash && m->e[h].hash != hash)
		h = (h + 1) & (m->cap - 1);
	if (!m->e[h].hash && !add)
		return NULL;
	if (!m->e[h].hash) {
		m->e[h].hash = hash;
		m->n++;
	}
	return &m->e[h];
}


uint32_t weft_mem__intern(struct weft_mem_proc *mp, uint32_t parent, uint32_t site)
{
	if (mp->nstacks * 2 >= mp->icap) { /* rehash */
		size_t cap = mp->icap ? mp->icap * 2 : 16; /* small: every process has one, most of them no heap */
		uint64_t *k = calloc(cap, sizeof(*k));
		uint32_t *v = calloc(cap, sizeof(*v));
		if (!k || !v)
			weft_oom("the memory analysis");
		for (size_t i = 0; i < mp->icap; i++) {
			if (!mp->ikeys[i])
				continue;
			size_t h = (size_t)((mp->ikeys[i] * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
			while (k[h])
				h = (h + 1) & (cap - 1);
			k[h] = mp->ikeys[i];
			v[h] = mp->ivals[i];
		}
		free(mp->ikeys);
		free(mp->ivals);
		mp->ikeys = k;
		mp->ivals = v;
		mp->icap = cap;
	}
	uint64_t key = (((uint64_t)parent << 32) | site) + 1;
	size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (mp->icap - 1);
	while (mp->ikeys[h]) {
		if (mp->ikeys[h] == key)
			return mp->ivals[h];
		h = (h + 1) & (mp->icap - 1);
	}
	GROW(mp->stacks, mp->nstacks, mp->stack_cap);
	uint32_t id = (uint32_t)mp->nstacks++;
	mp->stacks[id].parent = parent;
	mp->stacks[id].site = site;
	mp->stacks[id].depth = mp->stacks[parent].depth + 1;
	mp->ikeys[h] = key;
	mp->ivals[h] = id;
	return id;
}


/* memory_stacks: is this frame the allocator's own, not where an allocation came from? The
 * allocation functions and their C++ layers: operator new/new[] (aligned and nothrow alike), the
 * C allocation functions and weft's own (a wrapper's frame names the wrapper), std::allocator,
 * __gnu_cxx::new_allocator, std::__new_allocator, allocator_traits, and the rest of the C++
 * library's templates a container or string allocates through (std::, __gnu_cxx::). A name is
 * judged by its qualified name: the return type and the parameter list left out. */
static int allocator_frame(const char *name)
{
	static const char *const c_fns[] = {"malloc", "calloc", "realloc", "reallocarray", "free", "cfree",
					    "memalign", "aligned_alloc", "posix_memalign", "valloc", "pvalloc",
					    "strdup", "strndup", "__strdup", "__strndup", "__libc_malloc",
					    "__libc_calloc", "__libc_realloc", "__libc_memalign"};
	/* the qualified name: up to the parameter list (a '(' outside <>), after the return type (the
	 * last space outside <> before it) */
	size_t end = 0, start = 0;
	int depth = 0;
	for (; name[end] && !(name[end] == '(' && !depth); end++) {
		if (name[end] == '<')
			depth++;
		else if (name[end] == '>' && depth)
			depth--;
		else if (name[end] == ' ' && !depth)
			start = end + 1;
	}
	if (end >= 12 && !strncmp(name + end - 12, "operator new", 12))
		return 1;
	if (end >= 14 && !strncmp(name + end - 14, "operator new[]", 14))
		return 1;
	if (end >= 15 && !strncmp(name + end - 15, "operator delete", 15))
		return 1;
	const char *q = name + start;
	size_t n = end - start;
	if ((n > 5 && !strncmp(q, "std::", 5)) || (n > 11 && !strncmp(q, "__gnu_cxx::", 11)) ||
	    (n > 5 && !strncmp(q, "weft_", 5)))
		return 1;
	for (size_t i = 0; i < sizeof(c_fns) / sizeof(c_fns[0]); i++)
		if (strlen(c_fns[i]) == n && !strncmp(q, c_fns[i], n))
			return 1;
	return 0;
}

/* memory_stacks: each distinct call stack as an interned stack of function frames (outermost
 * first, named by the process's symbols; a return address is looked up one byte back, inside
 * the call); pass 2 gives every record that has one this stack instead of its slice stack. */
void weft_mem__resolve_stacks(struct weft_mem_proc *mp, struct mem_frame_map *fm)
{
	if (!fm->n)
		return;
	struct weft_proc *p = (struct weft_proc *)mp->p; /* frame names become sites of the process */
	struct weft_symtab *st = weft_symtab_open(p);
	struct { uint64_t pc; uint32_t site; int alloc; } *pcs = NULL; /* pc -> site, allocator's frame */
	size_t pcap = 0, npcs = 0;
	struct { const char *name; uint32_t site; } *names = NULL; /* name -> site, linear per pc miss */
	size_t ncap = 0, nnames = 0;
	for (size_t i = 0; i < fm->cap; i++) {
		struct mem_frames *f = &fm->e[i];
		if (!f->hash || !f->pcs)
			continue;
		/* names, innermost first; a return address outside every mapped file ends the stack
		 * (past it the walk read a frame pointer the code did not keep) */
		uint32_t sites[64], depth = 0, inner_alloc = 0;
		for (uint32_t k = 0; k < f->n && k < 64; k++) {
			uint64_t pc = f->pcs[k];
			uint32_t site = 0;
			int alloc = 0;
			for (size_t j = 0; j < npcs && !site; j++) /* stacks share most pcs: few distinct */
				if (pcs[j].pc == pc) {
					site = pcs[j].site;
					alloc = pcs[j].alloc;
				}
			if (!site) {
				char buf[1024], *heap = NULL;
				const char *name = buf;
				if (st)
					name = weft_symtab_name_full(st, pc - 1, buf, sizeof(buf), &heap);
				else
					snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)pc);
				if (name[0] == '0' && name[1] == 'x')
					site = UINT32_MAX;
				for (size_t j = 0; j < nnames && !site; j++)
					if (!strcmp(names[j].name, name))
						site = names[j].site;
				if (!site) {
					site = weft_proc_add_site(p, name, "");
					GROW(names, nnames, ncap);
					names[nnames].name = weft_site_name(p, site);
					names[nnames++].site = site;
				}
				alloc = site != UINT32_MAX && allocator_frame(name);
				free(heap);
				GROW(pcs, npcs, pcap);
				pcs[npcs].pc = pc;
				pcs[npcs].alloc = alloc;
				pcs[npcs++].site = site;
			}
			if (site == UINT32_MAX)
				break;
			if (depth == inner_alloc && alloc)
				inner_alloc++; /* still in the allocator's own frames */
			sites[depth++] = site;
		}
		/* named by where the allocation came from: the allocator's frames innermost are left out
		 * (all of them, when nothing else is known: then the stack stays whole) */
		uint32_t stack = 0, first = inner_alloc < depth ? inner_alloc : 0;
		while (depth > first)
			stack = weft_mem__intern(mp, stack, sites[--depth]);
		f->stack = stack;
		f->resolved = 1;
	}
	weft_symtab_close(st);
	free(pcs);
	free(names);
	for (size_t i = 0; i < fm->cap; i++) {
		free(fm->e[i].pcs);
		fm->e[i].pcs = NULL;
	}
}

void weft_mem__frames_free(struct mem_frame_map *fm)
{
	for (size_t i = 0; i < fm->cap; i++)
		free(fm->e[i].pcs);
	free(fm->e);
	memset(fm, 0, sizeof(*fm));
}

