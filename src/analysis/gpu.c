/*
 * gpu.c - the GPU collector's records (collect/cupti.c, GPU records) as activities on the
 * trace's clock. Only the chunks of the threads a process's GPU metadata names are decoded
 * (every thread's when it names the most it can hold: more threads may have written some).
 *
 * The clock map. CUPTI stamps device work in its own clock (cuptiGetTimestamp); the collector
 * writes pairs (that clock, CLOCK_BOOTTIME read just before and just after it). Pairs whose two
 * host readings lie more than twice the median distance apart (the thread was preempted
 * between them) are left out; a least-squares line through the rest maps device times, so an
 * offset and a rate difference (the clocks' drift) are both taken out, and one noisy pair
 * moves the line by its share only. With one pair the map is an offset; with none, device
 * times are taken as they are (CUPTI's clock is CLOCK_MONOTONIC-based on Linux: that is off by
 * the time the machine was suspended).
 */
#include "analysis/gpu.h"
#include "format/format.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 256;
	p = realloc(p, *cap * size);
	if (!p)
		weft_oom("reading the GPU records");
	return p;
}

/* ---- the clock map ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void fit_clock(const struct weft_proc *p, struct weft_gpu_proc *gp)
{
	size_t n = p->ngpu_clock;
	gp->slope = 1.0;
	gp->base_gpu = gp->base_host = 0;
	if (!n)
		return;
	uint64_t *w = malloc(n * sizeof(*w));
	if (!w)
		weft_oom("reading the GPU records");
	for (size_t i = 0; i < n; i++)
		w[i] = p->gpu_clock[i].width;
	qsort(w, n, sizeof(*w), cmp_u64);
	uint64_t med = w[n / 2]; /* and 1 us: pairs that close are all good (no overflow: a damaged
				  * width is near 2^64) */
	uint64_t limit = med > (UINT64_MAX - 1000) / 2 ? UINT64_MAX : 2 * med + 1000;
	free(w);
	const struct weft_gpu_clock_pt *first = NULL;
	long double sx = 0, sy = 0, sxx = 0, sxy = 0;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		const struct weft_gpu_clock_pt *c = &p->gpu_clock[i];
		if (c->width > limit)
			continue;
		if (!first)
			first = c;
		long double x = (long double)(int64_t)(c->gpu_ns - first->gpu_ns);
		long double y = (long double)(int64_t)(c->boot_ns - first->boot_ns);
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		m++;
	}
	gp->clock_points = m;
	if (!first)
		return;
	gp->base_gpu = first->gpu_ns;
	gp->base_host = first->boot_ns;
	long double den = (long double)m * sxx - sx * sx;
	long double slope = m >= 2 && den > 0 ? ((long double)m * sxy - sx * sy) / den : 1.0L;
	if (!(slope > 0.99L && slope < 1.01L)) /* a clock 1% off is not a clock: keep the offset */
		slope = 1.0L;
	long double icpt = (sy - slope * sx) / (long double)m;
	/* fold the intercept into the base so the map is base_host + (gpu - base_gpu) * slope */
	gp->base_host = (uint64_t)((long double)first->boot_ns + icpt);
	gp->slope = (double)slope;
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		const struct weft_gpu_clock_pt *c = &p->gpu_clock[i];
		if (c->width > limit)
			continue;
		long double x = (long double)(int64_t)(c->gpu_ns - gp->base_gpu);
		long double pred = (long double)gp->base_host + x * slope;
		double r = fabs((double)(pred - (long double)c->boot_ns));
		if (r > worst)
			worst = r;
	}
	gp->clock_residual_ns = worst;
}

static uint64_t to_host(const struct weft_gpu_proc *gp, uint64_t g)
{
	if (!gp->clock_points)
		return g;
	long double x = (long double)(int64_t)(g - gp->base_gpu);
	long double h = (long double)gp->base_host + x * gp->slope;
	return h <= 0 ? 0 : (uint64_t)(h + 0.5L);
}

/* ---- occupancy ---- */

double weft_gpu_occupancy(const struct weft_gpu_device_def *d, uint32_t threads, uint32_t regs, uint32_t shared,
			  uint32_t shared_per_sm)
{
	if (!d || !threads || !d->max_warps_sm || !d->warp_size)
		return -1;
	uint32_t warps = (threads + d->warp_size - 1) / d->warp_size;
	uint64_t blocks = d->max_blocks_sm ? d->max_blocks_sm : UINT32_MAX;
	uint64_t by_warps = d->max_warps_sm / warps;
	if (by_warps < blocks)
		blocks = by_warps;
	if (regs && d->max_regs_sm) {
		/* registers go to warps in units of 256 */
		uint64_t per_warp = ((uint64_t)regs * d->warp_size + 255) / 256 * 256;
		uint64_t by_regs = d->max_regs_sm / per_warp / warps;
		if (by_regs < blocks)
			blocks = by_regs;
	}
	uint64_t smem_sm = shared_per_sm ? shared_per_sm : d->max_shared_sm;
	if (smem_sm) {
		/* compute capability 8.0 and later reserve 1 KiB per block for the system; shared
		 * memory goes to blocks in units of 128 bytes (256 before 8.0) */
		uint64_t unit = d->cc_major >= 8 ? 128 : 256;
		uint64_t per_block = (uint64_t)shared + (d->cc_major >= 8 ? 1024 : 0);
		per_block = (per_block + unit - 1) / unit * unit;
		if (per_block) {
			uint64_t by_smem = smem_sm / per_block;
			if (by_smem < blocks)
				blocks = by_smem;
		}
	}
	double occ = (double)(blocks * warps) / d->max_warps_sm;
	return occ > 1 ? 1 : occ;
}

const struct weft_gpu_device_def *weft_gpu_device(const struct weft_proc *p, uint32_t id)
{
	for (size_t i = 0; i < p->ngpu_devices; i++)
		if (p->gpu_devices[i].id == id)
			return &p->gpu_devices[i];
	return NULL;
}

const char *weft_gpu_copy_kind(unsigned k)
{
	static const char *const names[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD",
					    "HtoH", "PtoP"};
	return k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

const char *weft_gpu_mem_kind(unsigned k)
{
	static const char *const names[] = {"unknown", "pageable", "pinned", "device", "array", "managed",
					    "device static", "managed static"};
	return k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status); /* libstdc++ */

const char *weft_gpu_kernel_name(const struct weft_proc *p, const struct weft_gpu_act *a, char **dem)
{
	*dem = NULL;
	const char *m = a->name_site && a->name_site < p->nsites && p->sites[a->name_site].name
				? p->sites[a->name_site].name : "(kernel)";
	if (m[0] != '_' || m[1] != 'Z')
		return m;
	int status = -1;
	char *d = __cxa_demangle(m, NULL, NULL, &status);
	if (!d || status) {
		free(d);
		return m;
	}
	*dem = d;
	return d;
}

/* ---- reading ---- */

static int wrote_gpu(const struct weft_proc *p, uint32_t tid)
{
	if (!p->gpu_ntids || p->gpu_ntids >= WEFT_GPU_MAX_TIDS)
		return 1; /* no word at stop (the process died first), or more threads than it names */
	for (uint32_t i = 0; i < p->gpu_ntids; i++)
		if (p->gpu_tids[i] == tid)
			return 1;
	return 0;
}

static uint32_t lo(uint64_t v) { return (uint32_t)v; }
static uint32_t hi(uint64_t v) { return (uint32_t)(v >> 32); }

static void record(struct weft_gpu_proc *gp, size_t *cap, const uint64_t *w)
{
	unsigned kind = weft_rec_track(w[1]), extra = weft_rec_extra(w[1]);
	const uint64_t *x = w + 2;
	if ((kind == WEFT_GPU_KERNEL && extra < 9) || ((kind == WEFT_GPU_MEMCPY || kind == WEFT_GPU_MEMSET) && extra < 4) ||
	    kind < WEFT_GPU_KERNEL || kind > WEFT_GPU_MEMSET)
		return; /* a kind or length this reader does not know */
	gp->acts = grow(gp->acts, cap, gp->n, sizeof(*gp->acts));
	struct weft_gpu_act *a = &gp->acts[gp->n++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->corr = weft_rec_id(w[1]);
	a->dev_start = w[0];
	a->dev_end = x[0] < w[0] ? w[0] : x[0];
	a->device = lo(x[1]);
	a->context = hi(x[1]);
	a->stream = lo(x[2]);
	a->occupancy = -1;
	if (kind == WEFT_GPU_KERNEL) {
		a->name_site = hi(x[2]);
		a->grid[0] = lo(x[3]);
		a->grid[1] = hi(x[3]);
		a->grid[2] = lo(x[4]);
		a->block[0] = hi(x[4]);
		a->block[1] = lo(x[5]);
		a->block[2] = hi(x[5]);
		a->regs = lo(x[6]);
		a->static_shared = hi(x[6]);
		a->dynamic_shared = lo(x[7]);
		a->local_per_thread = hi(x[7]);
		a->local_total = lo(x[8]);
		a->shared_executed = hi(x[8]);
		uint64_t threads = (uint64_t)a->block[0] * a->block[1] * a->block[2];
		a->occupancy = weft_gpu_occupancy(weft_gpu_device(gp->p, a->device), threads > UINT32_MAX ? 0 : (uint32_t)threads,
						  a->regs, a->static_shared + a->dynamic_shared, a->shared_executed);
	} else if (kind == WEFT_GPU_MEMCPY) {
		a->copy_kind = (unsigned)(x[2] >> 32) & 0xff;
		a->src_kind = (unsigned)(x[2] >> 40) & 0xff;
		a->dst_kind = (unsigned)(x[2] >> 48) & 0xff;
		a->flags = (unsigned)(x[2] >> 56);
		a->bytes = x[3];
	} else {
		a->value = hi(x[2]);
		a->bytes = x[3];
	}
}

static int cmp_act(const void *a, const void *b)
{
	const struct weft_gpu_act *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int cmp_launch(const void *a, const void *b)
{
	const struct weft_gpu_launch *x = a, *y = b;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

/* Every FLOW out of a GPU flow id of this process, with the event before it. */
static void find_launches(const struct weft_proc *p, struct weft_gpu_proc *gp, uint64_t **buf, size_t *cap)
{
	size_t lcap = 0;
	for (size_t k = 0; k < p->nthreads; k++) {
		const struct weft_thread_data *th = &p->threads[k];
		for (size_t c = 0; c < th->nchunks; c++) {
			size_t n;
			const char *why;
			if (weft_chunk_decode_prepared(&th->chunks[c], p, buf, cap, &n, &why))
				continue;
			const uint64_t *w = *buf;
			uint64_t ts = 0;
			uint32_t site = 0;
			for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(w[i + 1])) {
				unsigned type = weft_rec_type(w[i + 1]);
				if (type == WEFT_R_BEGIN) {
					ts = w[i];
					site = weft_rec_id(w[i + 1]);
				} else if (type == WEFT_R_FLOW_OUT && (w[i] >> 63) &&
					   ((w[i] >> 32) & 0x7fffffffu) == (uint32_t)p->pid && ts) {
					gp->launches = grow(gp->launches, &lcap, gp->nlaunches, sizeof(*gp->launches));
					gp->launches[gp->nlaunches++] = (struct weft_gpu_launch){(uint32_t)w[i], site, th->tid, ts};
				}
			}
		}
	}
	if (gp->nlaunches)
		qsort(gp->launches, gp->nlaunches, sizeof(*gp->launches), cmp_launch);
}

const struct weft_gpu_launch *weft_gpu_launch_of(const struct weft_gpu_proc *gp, uint32_t corr)
{
	struct weft_gpu_launch key = {.corr = corr};
	return gp->nlaunches ? bsearch(&key, gp->launches, gp->nlaunches, sizeof(key), cmp_launch) : NULL;
}

struct corr_ix { uint32_t corr; size_t i; };
static int cmp_corr_ix(const void *a, const void *b)
{
	const struct corr_ix *x = a, *y = b;
	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* flow_end on the earliest activity of each correlation id (acts are in start order). */
static void mark_flow_ends(struct weft_gpu_proc *gp)
{
	struct corr_ix *ix = malloc((gp->n + 1) * sizeof(*ix));
	if (!ix)
		weft_oom("reading the GPU records");
	for (size_t i = 0; i < gp->n; i++)
		ix[i] = (struct corr_ix){gp->acts[i].corr, i};
	qsort(ix, gp->n, sizeof(*ix), cmp_corr_ix);
	for (size_t i = 0; i < gp->n; i++)
		gp->acts[ix[i].i].flow_end = i == 0 || ix[i - 1].corr != ix[i].corr;
	free(ix);
}

/* Each activity's lane: the first row of its (device, stream) free at its start. */
static void assign_lanes(struct weft_gpu_proc *gp)
{
	struct row { uint32_t device, stream; unsigned lane; uint64_t end; } *rows = NULL;
	size_t n = 0, cap = 0;
	for (size_t k = 0; k < gp->n; k++) {
		struct weft_gpu_act *a = &gp->acts[k];
		struct row *free_row = NULL;
		unsigned next = 0;
		for (size_t i = 0; i < n; i++) {
			if (rows[i].device != a->device || rows[i].stream != a->stream)
				continue;
			next = rows[i].lane >= next ? rows[i].lane + 1 : next;
			if (!free_row && rows[i].end <= a->start)
				free_row = &rows[i];
		}
		if (!free_row) {
			rows = grow(rows, &cap, n, sizeof(*rows));
			free_row = &rows[n++];
			*free_row = (struct row){a->device, a->stream, next, 0};
		}
		free_row->end = a->end;
		a->lane = free_row->lane;
	}
	free(rows);
}

static void analyze_proc(const struct weft_proc *p, struct weft_gpu_proc *gp, int with_launches, uint64_t **buf,
			 size_t *cap)
{
	gp->p = p;
	fit_clock(p, gp);
	size_t acap = 0;
	for (size_t k = 0; k < p->nthreads; k++) {
		const struct weft_thread_data *th = &p->threads[k];
		if (!wrote_gpu(p, th->tid))
			continue;
		for (size_t c = 0; c < th->nchunks; c++) {
			size_t n;
			const char *why;
			if (weft_chunk_decode(&th->chunks[c], buf, cap, &n, &why))
				continue; /* the walkers count and report it */
			const uint64_t *w = *buf;
			for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(w[i + 1]))
				if (weft_rec_type(w[i + 1]) == WEFT_R_GPU && i + 2 + weft_rec_extra(w[i + 1]) <= n)
					record(gp, &acap, w + i);
		}
	}
	for (size_t i = 0; i < gp->n; i++) {
		gp->acts[i].start = to_host(gp, gp->acts[i].dev_start);
		gp->acts[i].end = to_host(gp, gp->acts[i].dev_end);
	}
	if (gp->n)
		qsort(gp->acts, gp->n, sizeof(*gp->acts), cmp_act);
	mark_flow_ends(gp);
	assign_lanes(gp);
	if (with_launches)
		find_launches(p, gp, buf, cap);
}

int weft_gpu_analyze(const struct weft_trace *t, int with_launches, struct weft_gpu **out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	*out = NULL;
	size_t with = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		with += t->procs[i].has_gpu && t->procs[i].gpu_state == 1;
	if (!with)
		return 0;
	struct weft_gpu *g = calloc(1, sizeof(*g));
	if (!g || !(g->procs = calloc(with, sizeof(*g->procs))))
		weft_oom("reading the GPU records");
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].has_gpu && t->procs[i].gpu_state == 1)
			analyze_proc(&t->procs[i], &g->procs[g->nprocs++], with_launches, &buf, &cap);
	free(buf);
	*out = g;
	return 0;
}

const struct weft_gpu_proc *weft_gpu_for(const struct weft_gpu *g, const struct weft_proc *p)
{
	for (size_t i = 0; g && i < g->nprocs; i++)
		if (g->procs[i].p == p)
			return &g->procs[i];
	return NULL;
}

void weft_gpu_free(struct weft_gpu *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nprocs; i++) {
		free(g->procs[i].acts);
		free(g->procs[i].launches);
	}
	free(g->procs);
	free(g);
}
