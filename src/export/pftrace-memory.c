/*
 * pftrace-memory.c - the memory part of a .pftrace (analysis/memory.h has the figures):
 *   counter tracks per process: "heap live bytes" and "heap peak bytes" for the C heap,
 *     "heap live bytes: NAME" / "heap peak bytes: NAME" for mmap and the program's named
 *     heaps, and "NAME reported live/cached/requested bytes" from weft_heap_usage;
 *   sampled memory accesses per process, cumulative counts: "memory accesses sampled (page
 *     faults)" all of them, "accesses: SITE" those in blocks allocated under slice SITE
 *     ("accesses: [outside any slice]": allocated outside any slice), "accesses: not in a recorded block"
 *     the rest (analysis/memory.h says how they are joined);
 *   a slice's own allocation figures as args on its end (mem.alloc_count, mem.alloc_bytes,
 *     mem.free_count, mem.freed_bytes; trace_processor merges them into the slice's args);
 *   a native heap profile per process and heap, the flame graph of the Perfetto UI: one
 *     sequence whose interned data holds the slice stacks as callstacks (a frame per slice
 *     name, root first) and whose ProfilePackets are cumulative dumps over the run plus one at
 *     the peak. Dump timestamps are on the trace's clock; the header's clock snapshot maps
 *     clock 4 (MONOTONIC_COARSE, the clock trace_processor reads them on) to it.
 */
#include "export/pftrace-memory.h"
#include "export/pftrace-counter.h"
#include "export/pb.h"
#include <stdio.h>
#include <string.h>

enum {
	TRACE_PACKET = 1, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11, TP_INTERNED = 12,
	TP_SEQ_FLAGS = 13, TP_TRACK_DESCRIPTOR = 60, TP_PROFILE = 37,
	TD_UUID = 1, TD_NAME = 2, TD_PARENT = 5, TD_COUNTER = 8, CD_UNIT = 3,
	TE_TYPE = 9, TE_TRACK_UUID = 11, TE_COUNTER = 30, TE_DEBUG = 4,
	DA_NAME = 10, DA_UINT = 3,
	ID_FUNCTION_NAMES = 5, ID_FRAMES = 6, ID_CALLSTACKS = 7, ID_MAPPING_PATHS = 17, ID_MAPPINGS = 19,
	PP_DUMPS = 5, PP_INDEX = 7, PHS_PID = 1, PHS_SAMPLES = 2, PHS_TIMESTAMP = 9, PHS_HEAP_NAME = 11,
	HS_CALLSTACK = 1, HS_ALLOCATED = 2, HS_FREED = 3, HS_ALLOC_COUNT = 5, HS_FREE_COUNT = 6,
	TYPE_COUNTER = 4, SEQ_CLEARED = 1, SEQ_NEEDS = 2, UNIT_COUNT = 2, UNIT_BYTES = 3,
};

/* counter kinds: with the pid and a heap (or for C_ACCESS_SITE a site) id, a counter's uuid */
enum { C_LIVE, C_PEAK, C_USE_LIVE, C_USE_CACHED, C_USE_REQUESTED, C_ACCESSES, C_ACCESS_SITE, C_ACCESS_UNJOINED };

static uint64_t counter_uuid(uint64_t (*mix)(uint64_t, uint64_t), int pid, uint32_t heap, unsigned kind)
{
	return mix(mix(8, ((uint64_t)(uint32_t)pid << 32) | heap), kind);
}

static void counter_track(struct pb *b, uint64_t uuid, uint64_t parent, const char *name, unsigned unit)
{
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, 1);
	size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
	pb_varint(b, TD_UUID, uuid);
	pb_varint(b, TD_PARENT, parent);
	pb_string(b, TD_NAME, name);
	size_t cd = pb_begin(b, TD_COUNTER);
	pb_varint(b, CD_UNIT, unit);
	pb_end(b, cd);
	pb_end(b, td);
	pb_end(b, pk);
}

static void heap_counter_name(char *buf, size_t n, const struct weft_mem_heap *h, const char *what)
{
	if (!h->id)
		snprintf(buf, n, "heap %s bytes", what);
	else
		snprintf(buf, n, "heap %s bytes: %s", what, h->name);
}

void weft_pf_mem_tracks(struct pb *b, const struct weft_mem_proc *mp, uint64_t proc_uuid,
			uint64_t (*mix)(uint64_t, uint64_t))
{
	char name[300];
	int pid = mp->p->pid;
	if (mp->naccesses)
		counter_track(b, counter_uuid(mix, pid, 0, C_ACCESSES), proc_uuid, "memory accesses sampled (page faults)",
			      UNIT_COUNT);
	for (size_t i = 0; i < mp->naccess_sites; i++) {
		uint32_t site = mp->access_sites[i].site;
		const char *sn = site ? weft_site_name(mp->p, site) : WEFT_MEM_NO_SLICE;
		if (sn)
			snprintf(name, sizeof(name), "accesses: %s", sn);
		else
			snprintf(name, sizeof(name), "accesses: site#%u", site);
		counter_track(b, counter_uuid(mix, pid, site, C_ACCESS_SITE), proc_uuid, name, UNIT_COUNT);
	}
	if (mp->unjoined.count)
		counter_track(b, counter_uuid(mix, pid, 0, C_ACCESS_UNJOINED), proc_uuid,
			      "accesses: not in a recorded block", UNIT_COUNT);
	for (size_t i = 0; i < mp->nheaps; i++) {
		const struct weft_mem_heap *h = &mp->heaps[i];
		if (h->npoints) {
			heap_counter_name(name, sizeof(name), h, "live");
			counter_track(b, counter_uuid(mix, pid, h->id, C_LIVE), proc_uuid, name, UNIT_BYTES);
			heap_counter_name(name, sizeof(name), h, "peak");
			counter_track(b, counter_uuid(mix, pid, h->id, C_PEAK), proc_uuid, name, UNIT_BYTES);
		}
		if (h->nusage) {
			static const char *const what[] = {"live", "cached", "requested"};
			for (unsigned k = 0; k < 3; k++) {
				snprintf(name, sizeof(name), "%s reported %s bytes", h->name, what[k]);
				counter_track(b, counter_uuid(mix, pid, h->id, C_USE_LIVE + k), proc_uuid, name, UNIT_BYTES);
			}
		}
	}
}

void weft_pf_mem_counters(struct pb *b, const struct weft_mem_proc *mp, uint32_t seq,
			  uint64_t (*mix)(uint64_t, uint64_t), void (*drain)(void *ctx), void *ctx)
{
	int pid = mp->p->pid;
	for (size_t k = 0; k < mp->naccesses; k++) {
		weft_pf_counter_point(b, seq, mp->accesses[k].ts, counter_uuid(mix, pid, 0, C_ACCESSES), mp->accesses[k].live);
		drain(ctx);
	}
	for (size_t i = 0; i <= mp->naccess_sites; i++) { /* the sites, then the unjoined */
		const struct weft_mem_access_site *s = i < mp->naccess_sites ? &mp->access_sites[i] : &mp->unjoined;
		uint64_t uuid = i < mp->naccess_sites ? counter_uuid(mix, pid, s->site, C_ACCESS_SITE)
						      : counter_uuid(mix, pid, 0, C_ACCESS_UNJOINED);
		for (size_t k = 0; k < s->npoints; k++) {
			weft_pf_counter_point(b, seq, s->points[k].ts, uuid, s->points[k].live);
			drain(ctx);
		}
	}
	for (size_t i = 0; i < mp->nheaps; i++) {
		const struct weft_mem_heap *h = &mp->heaps[i];
		uint64_t live = counter_uuid(mix, pid, h->id, C_LIVE), peak = counter_uuid(mix, pid, h->id, C_PEAK);
		for (size_t k = 0; k < h->npoints; k++) {
			weft_pf_counter_point(b, seq, h->points[k].ts, live, h->points[k].live);
			weft_pf_counter_point(b, seq, h->points[k].ts, peak, h->points[k].peak);
			drain(ctx);
		}
		for (size_t k = 0; k < h->nusage; k++) {
			const struct weft_mem_usage *u = &h->usage[k];
			weft_pf_counter_point(b, seq, u->ts, counter_uuid(mix, pid, h->id, C_USE_LIVE), u->live);
			weft_pf_counter_point(b, seq, u->ts, counter_uuid(mix, pid, h->id, C_USE_CACHED), u->cached);
			weft_pf_counter_point(b, seq, u->ts, counter_uuid(mix, pid, h->id, C_USE_REQUESTED), u->requested);
			drain(ctx);
		}
	}
}

static void annotation(struct pb *b, const char *name, uint64_t v)
{
	size_t m = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, name);
	pb_varint(b, DA_UINT, v);
	pb_end(b, m);
}

void weft_pf_mem_slice_args(struct pb *b, const struct weft_mem_slice *s)
{
	if (s->alloc_count)
		annotation(b, "mem.alloc_count", s->alloc_count);
	if (s->alloc_bytes)
		annotation(b, "mem.alloc_bytes", s->alloc_bytes);
	if (s->free_count)
		annotation(b, "mem.free_count", s->free_count);
	if (s->freed_bytes)
		annotation(b, "mem.freed_bytes", s->freed_bytes);
}

/* Interned frames: iid 1 is "[outside any slice]", iid site + 2 a slice name; callstack
 * iid = stack id + 1; one mapping (iid 1) standing for "the trace's slices". */
static void interned_stacks(struct pb *b, const struct weft_mem_proc *mp, uint32_t seq, uint64_t ts)
{
	const struct weft_proc *p = mp->p;
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_TIMESTAMP, ts);
	pb_varint(b, TP_SEQ_ID, seq);
	pb_varint(b, TP_SEQ_FLAGS, SEQ_CLEARED);
	size_t in = pb_begin(b, TP_INTERNED);
	pb_interned_string(b, ID_MAPPING_PATHS, 1, "weft slices");
	size_t m = pb_begin(b, ID_MAPPINGS);
	pb_varint(b, 1, 1);
	pb_varint(b, 4, 0x1000);
	pb_varint(b, 5, 0x2000);
	pb_varint(b, 7, 1);
	pb_end(b, m);
	/* a frame per site that appears in a stack (and the root's) */
	uint8_t *need = calloc(p->nsites + 2, 1);
	if (!need)
		weft_oom("writing the .pftrace");
	for (size_t s = 1; s < mp->nstacks; s++)
		if (mp->stacks[s].site <= p->nsites)
			need[mp->stacks[s].site] = 1;
	char buf[64];
	for (size_t id = 0; id <= p->nsites + 0; id++) {
		int root = id == 0;
		if (!root && !need[id])
			continue;
		const char *name = root ? WEFT_MEM_NO_SLICE : weft_site_name(p, (uint32_t)id);
		if (!name) {
			snprintf(buf, sizeof(buf), "site#%zu", id);
			name = buf;
		}
		uint64_t iid = root ? 1 : id + 2;
		pb_interned_string(b, ID_FUNCTION_NAMES, iid, name);
		m = pb_begin(b, ID_FRAMES);
		pb_varint(b, 1, iid);
		pb_varint(b, 2, iid);
		pb_varint(b, 3, 1);
		pb_varint(b, 4, iid);
		pb_end(b, m);
	}
	free(need);
	uint32_t path[4096];
	for (size_t s = 0; s < mp->nstacks; s++) {
		m = pb_begin(b, ID_CALLSTACKS);
		pb_varint(b, 1, s + 1);
		size_t n = 0;
		for (uint32_t k = (uint32_t)s; k && n < 4096; k = mp->stacks[k].parent)
			path[n++] = mp->stacks[k].site;
		if (!n)
			pb_varint(b, 2, 1);
		while (n) /* root first */
			pb_varint(b, 2, (uint64_t)path[--n] + 2);
		pb_end(b, m);
	}
	pb_end(b, in);
	pb_end(b, pk);
}

static const char *profile_heap_name(const struct weft_mem_heap *h)
{
	return h->id ? h->name : "libc.malloc";
}

uint32_t weft_pf_mem_profiles(struct pb *b, const struct weft_mem_proc *mp, uint32_t seq,
			      void (*drain)(void *ctx), void *ctx)
{
	uint32_t used = 0;
	for (size_t i = 0; i < mp->nheaps; i++) {
		const struct weft_mem_heap *h = &mp->heaps[i];
		if (!h->ndumps || !h->allocs)
			continue;
		uint32_t sq = seq + used++;
		interned_stacks(b, mp, sq, h->dumps[0].ts);
		drain(ctx);
		for (size_t d = 0; d < h->ndumps; d++) {
			const struct weft_mem_dump *dm = &h->dumps[d];
			size_t pk = pb_begin(b, TRACE_PACKET);
			pb_varint(b, TP_TIMESTAMP, dm->ts);
			pb_varint(b, TP_SEQ_ID, sq);
			pb_varint(b, TP_SEQ_FLAGS, SEQ_NEEDS);
			size_t pp = pb_begin(b, TP_PROFILE);
			size_t ds = pb_begin(b, PP_DUMPS);
			pb_varint(b, PHS_PID, (uint64_t)(uint32_t)mp->p->pid);
			pb_varint(b, PHS_TIMESTAMP, dm->ts);
			pb_string(b, PHS_HEAP_NAME, profile_heap_name(h));
			for (size_t s = 0; s < mp->nstacks; s++) {
				if (!dm->alloc_count[s] && !dm->free_count[s])
					continue;
				size_t hs = pb_begin(b, PHS_SAMPLES);
				pb_varint(b, HS_CALLSTACK, s + 1);
				pb_varint(b, HS_ALLOCATED, dm->alloc_bytes[s]);
				pb_varint(b, HS_FREED, dm->freed_bytes[s]);
				pb_varint(b, HS_ALLOC_COUNT, dm->alloc_count[s]);
				pb_varint(b, HS_FREE_COUNT, dm->free_count[s]);
				pb_end(b, hs);
			}
			pb_end(b, ds);
			pb_varint(b, PP_INDEX, d);
			pb_end(b, pp);
			pb_end(b, pk);
			drain(ctx);
		}
	}
	return used;
}
