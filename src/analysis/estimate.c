/*
 * estimate.c - see estimate.h. Each thread's chunks are read once, in order: a chunk's packed
 * stream (zstd undone) is walked record by record for each record's packed length (the walk
 * weft_unpack_each makes, with pack.h's own readers), the chunk is decoded by the reader as
 * every command decodes it, and record k of the one is record k of the other. Each record goes
 * to a row by its kind and name (arguments and the like to the event before them), with its
 * share of the chunk's frame bytes; then the model's walker (model.h) sees the same records
 * and gives each closed slice's duration to its row. Rows are merged across processes by kind
 * and name through one hash table; a per-process cache maps a site id to its row, so a record
 * costs an array lookup.
 */
#include "analysis/estimate.h"
#include "export/model.h"
#include "format/format.h"
#include "format/pack.h"
#include "format/symbols.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

static const char *const kind_names[WEFT_EST_NKINDS] = {
	"function", "slice", "python", "mpi", "instant", "counter", "async", "memory",
	"access", "sched", "sample", "gpu", "weft",
};

const char *weft_est_kind_name(unsigned kind)
{
	return kind < WEFT_EST_NKINDS ? kind_names[kind] : "?";
}

int weft_est_kind_filterable(unsigned kind)
{
	/* not MPI calls: a message's arrow needs both of its calls */
	return kind == WEFT_EST_FUNCTION || kind == WEFT_EST_SLICE || kind == WEFT_EST_PYTHON;
}

/* Rows a site id can have, one per use of the site (the cache's second index). */
enum sub { S_FUNC, S_SLICE, S_INSTANT, S_COUNTER, S_ASYNC, S_ALLOC, S_FREE, S_REALLOC, S_HEAP, S_KERNEL, NSUB };

/* Rows that are not a site's: fixed names. */
static const struct { unsigned kind; const char *name; } fixed[] = {
#define F_ACCESS 0 /* + source 0..6 */
	{WEFT_EST_ACCESS, "access (unknown source)"}, {WEFT_EST_ACCESS, "page fault"},
	{WEFT_EST_ACCESS, "PEBS load"}, {WEFT_EST_ACCESS, "PEBS store"}, {WEFT_EST_ACCESS, "IBS op"},
	{WEFT_EST_ACCESS, "watchpoint write"}, {WEFT_EST_ACCESS, "watchpoint read/write"},
#define F_SCHED 7 /* + kind 0..7 */
	{WEFT_EST_SCHED, "sched (unknown kind)"}, {WEFT_EST_SCHED, "switch"}, {WEFT_EST_SCHED, "waking"},
	{WEFT_EST_SCHED, "new task"}, {WEFT_EST_SCHED, "rename"}, {WEFT_EST_SCHED, "off CPU"},
	{WEFT_EST_SCHED, "on CPU"}, {WEFT_EST_SCHED, "task name"},
#define F_GPU 15 /* + kind 0..3 */
	{WEFT_EST_GPU, "GPU record (unknown kind)"}, {WEFT_EST_GPU, "kernel (unnamed)"},
	{WEFT_EST_GPU, "memcpy"}, {WEFT_EST_GPU, "memset"},
#define F_DROPPED 19
	{WEFT_EST_WEFT, "dropped-events marker"},
#define F_JMP 20
	{WEFT_EST_WEFT, "setjmp/longjmp"},
#define F_LOOSE 21
	{WEFT_EST_WEFT, "arguments without an event"},
#define F_OTHER 22
	{WEFT_EST_WEFT, "unknown record type"},
#define F_CHANNEL 23
	{WEFT_EST_SAMPLE, "sampler (unknown channel)"},
#define F_UNNAMED 24
	{WEFT_EST_SLICE, "(unknown site)"},
};
#define NFIXED (sizeof(fixed) / sizeof(fixed[0]))

struct pcache {
	const struct weft_proc *p;
	size_t nsites;
	int32_t *site; /* [id * NSUB + sub]: row + 1, 0 unknown */
	uint8_t *is_func; /* [id]: the id is a function's (FUNC_ENTER/EXIT seen) */
	int32_t fixed[NFIXED];
	int32_t *chan; /* [k] for p->sys_chans[k] */
};

struct slice_open { uint64_t serial, ts; uint32_t row; };

struct ctx {
	struct weft_estimate *e;
	size_t cap;
	uint32_t *hash; /* row + 1 */
	size_t hcap;
	struct pcache *pc;
	struct slice_open *open;
	size_t nopen, ocap;
	uint8_t *packed;
	size_t pcap;
	uint32_t *sizes;
	size_t scap;
};

static uint64_t hash_of(unsigned kind, const char *s)
{
	uint64_t h = 1469598103934665603ull ^ kind;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void grow_hash(struct ctx *x)
{
	size_t cap = x->hcap ? x->hcap * 2 : 1024;
	uint32_t *h = calloc(cap, sizeof(*h));
	if (!h)
		weft_oom("estimating");
	for (size_t i = 0; i < x->e->nrows; i++) {
		const struct weft_est_row *r = &x->e->rows[i];
		size_t k = (size_t)hash_of(r->kind, r->name) & (cap - 1);
		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = (uint32_t)i + 1;
	}
	free(x->hash);
	x->hash = h;
	x->hcap = cap;
}

static int32_t row_named(struct ctx *x, unsigned kind, const char *name)
{
	if ((x->e->nrows + 1) * 2 > x->hcap)
		grow_hash(x);
	size_t k = (size_t)hash_of(kind, name) & (x->hcap - 1);
	for (; x->hash[k]; k = (k + 1) & (x->hcap - 1)) {
		struct weft_est_row *r = &x->e->rows[x->hash[k] - 1];
		if (r->kind == kind && !strcmp(r->name, name))
			return (int32_t)x->hash[k] - 1;
	}
	if (x->e->nrows == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 256;
		x->e->rows = realloc(x->e->rows, x->cap * sizeof(*x->e->rows));
		if (!x->e->rows)
			weft_oom("estimating");
	}
	struct weft_est_row *r = &x->e->rows[x->e->nrows];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->name = name;
	x->hash[k] = (uint32_t)++x->e->nrows;
	return (int32_t)x->e->nrows - 1;
}

static const char *own(struct weft_estimate *e, const char *s);

/* The row of a name made here (buf, copied when the row is new). */
static int32_t row_owned(struct ctx *x, unsigned kind, const char *buf)
{
	if ((x->e->nrows + 1) * 2 > x->hcap)
		grow_hash(x);
	for (size_t k = (size_t)hash_of(kind, buf) & (x->hcap - 1); x->hash[k]; k = (k + 1) & (x->hcap - 1))
		if (x->e->rows[x->hash[k] - 1].kind == kind && !strcmp(x->e->rows[x->hash[k] - 1].name, buf))
			return (int32_t)x->hash[k] - 1;
	return row_named(x, kind, own(x->e, buf));
}

static int32_t row_fixed(struct ctx *x, unsigned f)
{
	if (!x->pc->fixed[f])
		x->pc->fixed[f] = row_named(x, fixed[f].kind, fixed[f].name) + 1;
	return x->pc->fixed[f] - 1;
}

static int cat_is(const struct weft_site_def *s, const char *prefix)
{
	return s->cat && !strncmp(s->cat, prefix, strlen(prefix));
}

/* The row of site `id` used as `sub`. */
static int32_t row_site(struct ctx *x, unsigned sub, uint32_t id)
{
	struct pcache *pc = x->pc;
	if (id >= pc->nsites || !pc->p->sites[id].defined || !pc->p->sites[id].name)
		return sub == S_KERNEL ? row_fixed(x, F_GPU + 1) : row_fixed(x, F_UNNAMED);
	int32_t *slot = &pc->site[(size_t)id * NSUB + sub];
	if (*slot)
		return *slot - 1;
	const struct weft_site_def *s = &pc->p->sites[id];
	unsigned kind = WEFT_EST_SLICE;
	const char *name = s->name;
	static const char *const mem[] = {"alloc", "free", "realloc", "heap usage"};
	char buf[512];
	switch (sub) {
	case S_FUNC: kind = WEFT_EST_FUNCTION; break;
	case S_SLICE:
		kind = cat_is(s, "python") ? WEFT_EST_PYTHON : cat_is(s, "mpi") ? WEFT_EST_MPI
		       : cat_is(s, "cuda") ? WEFT_EST_GPU : WEFT_EST_SLICE;
		break;
	case S_INSTANT: kind = WEFT_EST_INSTANT; break;
	case S_COUNTER: kind = WEFT_EST_COUNTER; break;
	case S_ASYNC: kind = WEFT_EST_ASYNC; break;
	case S_KERNEL: kind = WEFT_EST_GPU; break;
	default: /* a heap's allocations: "alloc: NAME", a name made here (owned by the estimate) */
		kind = WEFT_EST_MEMORY;
		snprintf(buf, sizeof(buf), "%s: %s", mem[sub - S_ALLOC], s->name);
		name = NULL;
		break;
	}
	if (!name) {
		*slot = row_owned(x, kind, buf) + 1;
		return *slot - 1;
	}
	*slot = row_named(x, kind, name) + 1;
	return *slot - 1;
}

/* The C heap's rows (heap id 0). */
static int32_t row_heap(struct ctx *x, unsigned sub, uint32_t id)
{
	static const char *const c_heap[] = {"alloc: C heap", "free: C heap", "realloc: C heap",
					     "heap usage: C heap"};
	if (id == 0)
		return row_named(x, WEFT_EST_MEMORY, c_heap[sub - S_ALLOC]);
	return row_site(x, sub, id);
}

static int32_t row_channel(struct ctx *x, uint32_t id)
{
	const struct weft_proc *p = x->pc->p;
	for (size_t k = 0; k < p->nsys_chans; k++)
		if (p->sys_chans[k].id == id) {
			if (!x->pc->chan[k])
				x->pc->chan[k] = row_named(x, WEFT_EST_SAMPLE,
							   p->sys_chans[k].name ? p->sys_chans[k].name : "?") + 1;
			return x->pc->chan[k] - 1;
		}
	return row_fixed(x, F_CHANNEL);
}

/* Each record's length in a packed stream of packing fmt: what weft_unpack_each reads for it.
 * Returns the number of records, or (size_t)-1 if the stream is malformed or holds more than
 * cap records. */
static size_t packed_sizes(const uint8_t *in, size_t len, int fmt, uint32_t *sizes, size_t cap)
{
	uint64_t mru[4] = {0, 0, 0, 0};
	const uint8_t *p = in, *end = in + len;
	struct weft__cols col = {0, 0, 0, 0};
	struct weft__cols4 c4 = {0, 0, 0, 0, 0, 0, 0, 0};
	size_t m, k = 0;
	if (fmt == 3) { /* a memory record's words are in the columns: counted with it */
		if (weft__cols_find(in, len, &m, &col))
			return (size_t)-1;
		end = in + m;
	} else if (fmt >= 4) { /* and its delta too (versions 4, 5; in 5 a flow's id too) */
		if (weft__cols4_find(in, len, &m, &c4))
			return (size_t)-1;
		end = in + m;
	}
	uint64_t prev_flow = 0;
	while (p < end) {
		const uint8_t *at = p;
		size_t in_cols = 0;
		uint64_t h, v;
		unsigned small;
		if (weft__unpack_hdr(&p, end, mru, &h, fmt, &small) < 0)
			return (size_t)-1;
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		int leaf = fmt >= 4 && type == WEFT_R_LEAF && extra == 1; /* decoded: its BEGIN and END */
		const uint8_t *c4_at[4] = {c4.d, c4.c, c4.a, c4.s};
		if (fmt >= 4 && weft_rec_has_ticks(type)) {
			if (weft__unpack4_delta(small, &p, end, &c4, &v))
				return (size_t)-1;
		} else if (weft_rec_has_ticks(type)) {
			if (small == WEFT_PACK_LONG && weft__get_varint(&p, end, &v))
				return (size_t)-1;
		} else if (small < WEFT_PACK_LONG || small >= WEFT_PACK5_COL) {
			return (size_t)-1;
		} else if (fmt == 5 && weft__flow_type(type)) {
			if (weft__unpack5_flow(&c4, &prev_flow, &v))
				return (size_t)-1;
		} else {
			if (end - p < 8)
				return (size_t)-1;
			p += 8;
		}
		if (fmt >= 4 && weft_rec_is_mem(type)) {
			uint64_t x[256], prev_addr = 0; /* (the values are not needed: only their lengths) */
			if (weft__unpack4_mem(&c4, x, type, extra, &prev_addr))
				return (size_t)-1;
		} else if (fmt == 3 && weft_rec_is_mem(type)) {
			for (unsigned j = 0; j < extra; j++) {
				int addr = weft__mem_is_addr(type, j, extra);
				const uint8_t **q = addr ? &col.a : &col.s, *from = *q;
				if (weft__get_varint(q, addr ? col.a_end : col.s_end, &v))
					return (size_t)-1;
				in_cols += (size_t)(*q - from);
			}
		} else if (fmt == 2 && weft_rec_is_mem(type)) {
			for (unsigned j = 0; j < extra; j++)
				if (weft__get_varint(&p, end, &v))
					return (size_t)-1;
		} else if (leaf) {
			if (weft__get_varint(&p, end, &v))
				return (size_t)-1;
		} else {
			if ((size_t)(end - p) < (size_t)extra * 8)
				return (size_t)-1;
			p += (size_t)extra * 8;
		}
		if (k + (size_t)leaf >= cap)
			return (size_t)-1;
		if (fmt >= 4)
			in_cols = (size_t)(c4.d - c4_at[0] + c4.c - c4_at[1] + c4.a - c4_at[2] + c4.s - c4_at[3]);
		uint32_t size = (uint32_t)(p - at + in_cols);
		if (leaf) /* split between the BEGIN and the END */
			sizes[k++] = size - size / 2, size /= 2;
		sizes[k++] = size;
	}
	return k;
}

/* The packed length of each record of chunk c, whose decoded records are r[0..n): into
 * x->sizes[0..*nrec). Returns 0, -ENOMEM, or -EBADMSG when the two disagree (the chunk is then
 * counted as not decoded). */
static int chunk_sizes(struct ctx *x, const struct weft_chunk_view *c, const uint64_t *r, size_t n, size_t *nrec)
{
	size_t k = 0;
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(r[i + 1]))
		k++;
	*nrec = k;
	if (k + 1 > x->scap) {
		free(x->sizes);
		x->sizes = malloc((k + 1) * sizeof(*x->sizes));
		x->scap = x->sizes ? k + 1 : 0;
		if (!x->sizes)
			return -ENOMEM;
	}
	int fmt = weft_chunk_packing(c->flags);
	if (!fmt) { /* stored unpacked: 8 bytes a word */
		k = 0;
		for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(r[i + 1]))
			x->sizes[k++] = (uint32_t)(2 + weft_rec_extra(r[i + 1])) * 8;
		return 0;
	}
	const uint8_t *packed = c->stored;
	size_t len = c->stored_size;
	if (c->flags & WEFT_CHUNK_ZSTD) {
		size_t room = weft_pack_bound(c->raw_size / 8);
		if (room > x->pcap) {
			free(x->packed);
			x->packed = malloc(room);
			x->pcap = x->packed ? room : 0;
			if (!x->packed)
				return -ENOMEM;
		}
		len = ZSTD_decompress(x->packed, room, c->stored, c->stored_size);
		if (ZSTD_isError(len))
			return -EBADMSG;
		packed = x->packed;
	}
	return packed_sizes(packed, len, fmt, x->sizes, x->scap) == *nrec ? 0 : -EBADMSG;
}

static void on_event(void *ud, const struct weft_ev *ev)
{
	struct ctx *x = ud;
	if (ev->kind == WEFT_EV_BEGIN) {
		if (x->nopen == x->ocap) {
			x->ocap = x->ocap ? x->ocap * 2 : 256;
			x->open = realloc(x->open, x->ocap * sizeof(*x->open));
			if (!x->open)
				weft_oom("estimating");
		}
		unsigned sub = ev->id < x->pc->nsites && x->pc->is_func[ev->id] ? S_FUNC : S_SLICE;
		x->open[x->nopen++] = (struct slice_open){ev->serial, ev->ts, (uint32_t)row_site(x, sub, ev->id)};
		return;
	}
	if (ev->kind == WEFT_EV_COMPLETE) {
		struct weft_est_row *r = &x->e->rows[row_site(x, S_SLICE, ev->id)];
		r->slices++;
		r->dur_ns += ev->end_ts - ev->ts;
		return;
	}
	if (ev->kind != WEFT_EV_END)
		return;
	/* the walker balances each track; tracks interleave, so look from the top */
	for (size_t k = x->nopen; k-- > 0;)
		if (x->open[k].serial == ev->serial) {
			struct weft_est_row *r = &x->e->rows[x->open[k].row];
			r->slices++;
			r->dur_ns += ev->ts > x->open[k].ts ? ev->ts - x->open[k].ts : 0;
			memmove(&x->open[k], &x->open[k + 1], (x->nopen - k - 1) * sizeof(*x->open));
			x->nopen--;
			return;
		}
}

/* Gives chunk c's records r[0..n) (prepared) to their rows, with sizes x->sizes[0..nrec). */
static void attribute(struct ctx *x, const struct weft_chunk_view *c, const uint64_t *r, size_t n, size_t nrec)
{
	uint64_t total = 0, frame = sizeof(struct weft_chunk_header) + (uint64_t)c->stored_size;
	for (size_t k = 0; k < nrec; k++)
		total += x->sizes[k];
	uint64_t cum = 0, given = 0;
	int32_t owner = -1;
	size_t k = 0;
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(r[i + 1]), k++) {
		uint64_t h = r[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h), track = weft_rec_track(h);
		uint32_t id = weft_rec_id(h);
		int32_t row;
		int event_like = 1;
		switch (type) {
		case WEFT_R_FUNC_ENTER:
		case WEFT_R_FUNC_EXIT:
			if (id < x->pc->nsites)
				x->pc->is_func[id] = 1;
			row = row_site(x, S_FUNC, id);
			break;
		case WEFT_R_BEGIN: case WEFT_R_END: case WEFT_R_COMPLETE:
			row = row_site(x, S_SLICE, id);
			break;
		case WEFT_R_INSTANT: row = row_site(x, S_INSTANT, id); break;
		case WEFT_R_COUNTER_I64: case WEFT_R_COUNTER_F64: row = row_site(x, S_COUNTER, id); break;
		case WEFT_R_ASYNC_BEGIN: case WEFT_R_ASYNC_END: case WEFT_R_ASYNC_INSTANT:
			row = row_site(x, S_ASYNC, id);
			break;
		case WEFT_R_ALLOC: case WEFT_R_FREE: case WEFT_R_REALLOC: case WEFT_R_HEAP_USAGE:
			row = row_heap(x, S_ALLOC + (type - WEFT_R_ALLOC), id);
			break;
		case WEFT_R_ACCESS: row = row_fixed(x, F_ACCESS + (track <= 6 ? track : 0)); break;
		case WEFT_R_SCHED: row = row_fixed(x, F_SCHED + (track <= 7 ? track : 0)); break;
		case WEFT_R_SAMPLE: row = row_channel(x, id); break;
		case WEFT_R_GPU:
			if (track == WEFT_GPU_KERNEL && extra >= 3)
				row = row_site(x, S_KERNEL, (uint32_t)(r[i + 4] >> 32));
			else
				row = row_fixed(x, F_GPU + (track <= 3 ? track : 0));
			break;
		case WEFT_R_DROPPED: row = row_fixed(x, F_DROPPED); break;
		case WEFT_R_SETJMP: case WEFT_R_LONGJMP: row = row_fixed(x, F_JMP); break;
		case WEFT_R_CPUMEM: /* a slice's exact CPU time and RSS: the slice's */
			row = row_site(x, id < x->pc->nsites && x->pc->is_func[id] ? S_FUNC : S_SLICE, id);
			event_like = 0;
			break;
		case WEFT_R_ARG_I64: case WEFT_R_ARG_U64: case WEFT_R_ARG_F64: case WEFT_R_ARG_BOOL:
		case WEFT_R_ARG_PTR: case WEFT_R_ARG_STR: case WEFT_R_FLOW_OUT: case WEFT_R_FLOW_IN:
		case WEFT_R_STACK: /* the event before them (after an END: the slice it ends) */
			row = owner >= 0 ? owner : row_fixed(x, F_LOOSE);
			event_like = 0;
			break;
		default: row = row_fixed(x, F_OTHER); break;
		}
		if (event_like)
			owner = row;
		/* record k's share: the frame's bytes up to its end, minus those up to its start */
		cum += x->sizes[k];
		uint64_t upto = total ? (uint64_t)(((unsigned __int128)frame * cum) / total) : 0;
		struct weft_est_row *w = &x->e->rows[row];
		w->events += (uint64_t)weft_rec_events(type);
		w->records++;
		w->raw_bytes += (2 + (uint64_t)extra) * 8;
		w->packed_bytes += x->sizes[k];
		w->bytes += upto - given;
		given = upto;
		x->e->events += (uint64_t)weft_rec_events(type);
		x->e->records++;
		x->e->raw_bytes += (2 + (uint64_t)extra) * 8;
		x->e->packed_bytes += x->sizes[k];
	}
	if (given < frame) /* a chunk without records: its frame is weft's */
		x->e->rows[row_fixed(x, F_OTHER)].bytes += frame - given;
}

static void thread_pass(struct ctx *x, struct weft_est_proc *ep, const struct weft_thread_data *th,
			uint64_t **buf, size_t *cap, struct weft_walk_stats *st)
{
	const struct weft_proc *p = x->pc->p;
	struct weft_walker w;
	weft_walker_init(&w, p, on_event, x, st);
	x->nopen = 0;
	for (size_t c = 0; c < th->nchunks; c++) {
		const struct weft_chunk_view *cv = &th->chunks[c];
		uint64_t frame = sizeof(struct weft_chunk_header) + (uint64_t)cv->stored_size;
		size_t n, nrec;
		const char *why = NULL;
		int rc = weft_chunk_decode_prepared(cv, p, buf, cap, &n, &why);
		if (!rc && (rc = chunk_sizes(x, cv, *buf, n, &nrec)) != 0)
			why = "packed records do not match the decoded ones";
		if (rc) {
			if (rc == -ENOMEM) {
				x->e->oom++;
				continue;
			}
			x->e->bad_chunks++;
			x->e->bad_chunk_bytes += frame;
			if (!x->e->bad_why)
				x->e->bad_why = why;
			continue;
		}
		x->e->chunks++;
		x->e->chunk_bytes += frame;
		ep->chunk_bytes += frame;
		ep->raw_bytes += (uint64_t)n * 8;
		attribute(x, cv, *buf, n, nrec);
		weft_walker_feed_prepared(&w, *buf, n);
	}
	weft_walker_finish(&w, x->e->last_ns);
}

int weft_estimate_files(struct weft_estimate *e, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *de;
	char path[4096];
	uint64_t events_bytes = 0;
	e->meta_bytes = e->header_bytes = 0;
	while ((de = readdir(d))) {
		if (!weft_is_trace_file(de->d_name))
			continue;
		struct stat sb;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &sb) || !S_ISREG(sb.st_mode))
			continue;
		uint64_t size = (uint64_t)sb.st_size;
		if (!strcmp(strrchr(de->d_name, '.'), ".wmeta")) {
			e->meta_bytes += size;
		} else {
			uint64_t hdr = sizeof(struct weft_file_header);
			e->header_bytes += size < hdr ? size : hdr;
			events_bytes += size;
		}
	}
	closedir(d);
	uint64_t kept = e->header_bytes + e->chunk_bytes + e->bad_chunk_bytes;
	e->unread_bytes = events_bytes > kept ? events_bytes - kept : 0;
	e->file_bytes = e->meta_bytes + kept + e->unread_bytes;
	return 0;
}

/* A copy of s owned by the estimate. */
static const char *own(struct weft_estimate *e, const char *s)
{
	char **v = realloc(e->owned, (e->nowned + 1) * sizeof(*v));
	char *copy = strdup(s);
	if (!v || !copy)
		weft_oom("estimating");
	e->owned = v;
	v[e->nowned++] = copy;
	return copy;
}

/* The mangled symbols of the process's C++ function rows: an address of each such function
 * (the reader's function table) named again from the ELF tables, without demangling. */
static void symbols_of(struct ctx *x)
{
	struct pcache *pc = x->pc;
	const struct weft_proc *p = pc->p;
	struct weft_symtab *st = NULL;
	for (size_t i = 0; i < p->func_cap; i++) {
		uint32_t id = p->func_id[i];
		if (!p->func_addr[i] || id >= pc->nsites || !pc->is_func[id] || !pc->site[(size_t)id * NSUB + S_FUNC])
			continue;
		struct weft_est_row *r = &x->e->rows[pc->site[(size_t)id * NSUB + S_FUNC] - 1];
		if (r->symbol || !strpbrk(r->name, ":(<> ,"))
			continue;
		if (!st && !(st = weft_symtab_open(p)))
			return;
		char sym[1024];
		weft_symtab_symbol(st, p->func_addr[i], sym, sizeof(sym));
		if (strlen(sym) + 1 >= sizeof(sym))
			continue; /* cut: not a name -F could match (mangled names are rarely this long) */
		if (sym[0] == '_' && sym[1] == 'Z' && strcmp(sym, r->name))
			r->symbol = own(x->e, sym);
	}
	weft_symtab_close(st);
}

static int cmp_row(const void *a, const void *b)
{
	const struct weft_est_row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->events != y->events)
		return x->events > y->events ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return strcmp(x->name, y->name);
}

int weft_estimate_build(const struct weft_trace *t, struct weft_estimate *out)
{
	memset(out, 0, sizeof(*out));
	struct ctx x = {.e = out};
	out->first_ns = t->first_ns;
	out->last_ns = t->last_ns;
	out->procs = calloc(t->nprocs + 1, sizeof(*out->procs));
	if (!out->procs)
		return -ENOMEM;
	out->nprocs = t->nprocs;
	uint64_t *buf = NULL;
	size_t cap = 0;
	struct weft_walk_stats st;
	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		struct weft_est_proc *ep = &out->procs[i];
		struct pcache pc = {.p = p, .nsites = p->nsites};
		pc.site = calloc((p->nsites + 1) * NSUB, sizeof(*pc.site));
		pc.is_func = calloc(p->nsites + 1, 1);
		pc.chan = calloc(p->nsys_chans + 1, sizeof(*pc.chan));
		if (!pc.site || !pc.is_func || !pc.chan)
			weft_oom("estimating");
		x.pc = &pc;
		ep->first_ns = t->first_ns; /* the run's span: a process may live for part of it */
		ep->last_ns = t->last_ns;
		ep->pid = p->pid;
		snprintf(ep->stem, sizeof(ep->stem), "%s", p->stem);
		ep->options = p->options;
		ep->has_pace = p->has_overhead && p->writer_cpu_ns > 0 && p->fin[3] > 0;
		ep->writer_cpu_ns = p->writer_cpu_ns;
		ep->writer_raw_bytes = p->fin[3];
		for (size_t h = 0; h < p->nthreads; h++) {
			const struct weft_thread_data *th = &p->threads[h];
			if (th->nchunks && !th->weft_own)
				ep->threads++;
			thread_pass(&x, ep, th, &buf, &cap, &st);
		}
		symbols_of(&x);
		free(pc.site);
		free(pc.is_func);
		free(pc.chan);
	}
	free(buf);
	free(x.open);
	free(x.packed);
	free(x.sizes);
	free(x.hash);
	out->oom += st.oom;
	out->file_bytes = out->chunk_bytes + out->bad_chunk_bytes; /* until weft_estimate_files */
	if (out->nrows)
		qsort(out->rows, out->nrows, sizeof(*out->rows), cmp_row);
	if (out->oom) {
		weft_estimate_free(out);
		return -ENOMEM;
	}
	return 0;
}

void weft_estimate_free(struct weft_estimate *e)
{
	for (size_t i = 0; i < e->nowned; i++)
		free(e->owned[i]);
	free(e->owned);
	free(e->rows);
	free(e->procs);
	memset(e, 0, sizeof(*e));
}

uint64_t weft_estimate_project(const struct weft_estimate *e, uint64_t dur_ns,
			       int (*keep)(const struct weft_est_row *r, void *ud), void *ud)
{
	uint64_t fixed_bytes = e->meta_bytes + e->header_bytes, grow = e->chunk_bytes;
	if (keep)
		for (size_t i = 0; i < e->nrows; i++)
			if (!keep(&e->rows[i], ud))
				grow -= e->rows[i].bytes;
	uint64_t span = e->last_ns > e->first_ns ? e->last_ns - e->first_ns : 0;
	if (!span)
		return fixed_bytes;
	return fixed_bytes + (uint64_t)(((unsigned __int128)grow * dur_ns) / span);
}

void weft_estimate_buffer(const struct weft_est_proc *p, uint64_t chunk_size, unsigned writers,
			  uint64_t dur_ns, double scale, struct weft_est_buffer *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t span = p->last_ns > p->first_ns ? p->last_ns - p->first_ns : 0;
	if (!writers)
		writers = 1;
	out->rate = span ? (double)p->raw_bytes * scale * 1e9 / (double)span : 0;
	/* the writers' start-up is in their CPU time: measured over a few chunks at least */
	out->pace = p->has_pace && p->writer_raw_bytes >= 4 * chunk_size
			    ? (double)p->writer_raw_bytes * 1e9 / (double)p->writer_cpu_ns : 0;
	/* each thread fills a chunk, each writer holds one; while a writer packs and compresses a
	 * chunk (chunk_size / pace seconds) the threads fill rate * chunk_size / pace bytes more,
	 * which wait in the queue: ceil(rate / pace) chunks */
	double queue = out->pace > 0 ? ceil(out->rate / out->pace) : 1;
	double need = (double)chunk_size * ((double)p->threads + writers + queue);
	if (out->pace > 0) {
		out->writers_needed = (unsigned)ceil(out->rate / out->pace);
		if (out->writers_needed < 1)
			out->writers_needed = 1;
		if (out->rate > out->pace * writers) { /* the backlog grows for the whole run */
			out->behind = 1;
			need += (out->rate - out->pace * writers) * (double)dur_ns / 1e9;
		}
	}
	out->need = (uint64_t)need;
}
