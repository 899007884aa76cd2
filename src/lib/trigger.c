/*
 * trigger.c - trigger=PATTERN>DURATION: a slice whose name matches PATTERN and that lasts
 * longer than DURATION requests a snapshot at its end (snapshot.c takes it on its own thread).
 *
 * The hot path is untouched for every other slice: whether a site is watched is decided once,
 * when the registry evaluates it (like cpu_mem_exact=), and a watched site gets the EXACT state,
 * whose begin and end already leave the inline path for weft__cpumem (collect/procstat.c).
 * There the begin pushes (site, time) on a small per-thread stack; after the END is written
 * (weft__exact_end, which weft.h's EXACT end calls) the entry is popped and the duration
 * compared; a slice that is too long posts a request (no lock, no allocation: snapshot.c's
 * slots) whose time is after the END, and goes on. Nesting deeper than the stack leaves the inner slices
 * unwatched; a slice whose end comes on another thread than its begin is not watched.
 */
#include "internal.h"
#include <errno.h>
#include <string.h>

int weft_triggers_on;

/* The watched sites, by id: open addressing, inserted under the registry's lock (evaluate()),
 * read by the threads that emit, which see an entry once they see the site's EXACT state
 * (the registry's release store after evaluate, their acquire load in weft__on). */
#define NWATCHED 1024
struct watched {
	uint32_t id;      /* 0: free */
	uint8_t exact;    /* cpu_mem_exact= matches too: CPUMEM records as well */
	uint64_t min_ns;  /* the shortest threshold of the triggers that match it */
	const char *name; /* the site's (static storage) */
};
static struct watched table[NWATCHED];
static struct weft_trigger_spec specs[WEFT_MAX_TRIGGERS];
static int nspecs = -1; /* parsed at the first evaluation (under the registry's lock) */

static struct watched *lookup(uint32_t id)
{
	for (unsigned i = 0, h = (id * 2654435761u) % NWATCHED; i < NWATCHED; i++, h = (h + 1) % NWATCHED) {
		if (table[h].id == id)
			return &table[h];
		if (!table[h].id)
			return NULL;
	}
	return NULL;
}

int weft_trigger_site(uint32_t id, const char *name, int exact)
{
	if (nspecs < 0) {
		char why[200];
		nspecs = weft_trigger_parse(weft_cfg.trigger, specs, why, sizeof(why));
		if (nspecs < 0)
			nspecs = 0;
	}
	if (!nspecs || !id || !name)
		return 0;
	uint64_t min = UINT64_MAX;
	for (int i = 0; i < nspecs; i++)
		if (weft_glob_match(specs[i].pattern, name) && specs[i].min_ns < min)
			min = specs[i].min_ns;
	if (min == UINT64_MAX)
		return 0;
	struct watched *w = lookup(id);
	if (!w) {
		for (unsigned i = 0, h = (id * 2654435761u) % NWATCHED; i < NWATCHED && !w; i++, h = (h + 1) % NWATCHED)
			if (!table[h].id)
				w = &table[h];
		if (!w)
			return 0; /* full: left unwatched */
		w->exact = (uint8_t)(exact != 0);
		w->min_ns = min;
		w->name = name;
		__atomic_store_n(&w->id, id, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&weft_triggers_on, 1, __ATOMIC_RELEASE);
	return 1;
}

/* The calling thread's open watched slices: written by the thread itself only. */
#define DEPTH 16
static __thread struct open_slice {
	uint32_t id;
	uint64_t t0; /* CLOCK_BOOTTIME ns (the vDSO: no calibration needed, unlike ticks) */
} open_slices[DEPTH] WEFT_TLS;
static __thread unsigned depth WEFT_TLS;

int weft_trigger_slice(uint32_t id, unsigned at_end)
{
	const struct watched *w = lookup(id);
	if (!w)
		return 1;
	if (!at_end) {
		if (depth < DEPTH) {
			open_slices[depth].id = id;
			open_slices[depth].t0 = weft_boottime_ns();
		}
		depth++;
	}
	return w->exact; /* the end is weft__exact_end's, once the END is written */
}

void weft__exact_end(uint32_t id)
{
	if (!__atomic_load_n(&weft_triggers_on, __ATOMIC_ACQUIRE))
		return;
	const struct watched *w = lookup(id);
	if (!w)
		return;
	int e = errno;
	uint64_t t1 = weft__ticks(); /* after the END's own reading: the request comes after it */
	uint64_t now = weft_boottime_ns();
	if (depth > DEPTH) {
		depth--;
		errno = e;
		return;
	}
	/* the innermost open slice of this site (an end without a watched begin is not watched) */
	unsigned d = depth;
	while (d > 0 && open_slices[d - 1].id != id)
		d--;
	if (d) {
		depth = d - 1;
		uint64_t ns = now - open_slices[d - 1].t0;
		if (ns > w->min_ns)
			weft_snapshot_trigger(w->name, ns, w->min_ns, t1);
	}
	errno = e;
}
