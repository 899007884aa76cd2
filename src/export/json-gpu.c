/*
 * json-gpu.c - the GPU collector's part of the Chrome JSON. Every GPU is a process row of its
 * own, pid WEFT_JSON_GPU_PID + its id, named "GPU N: NAME"; every CUDA stream a thread row in
 * it, tid the stream id, named "stream S" (with the process's name and pid when several
 * processes used GPUs, whose stream ids may meet: their tids then carry the process's index
 * << 20). Kernels, copies and memsets are complete events ("ph":"X") there, with the
 * arguments the .pftrace gives them (pftrace-gpu.c). A row's X events must nest, so one that
 * overlaps the one before it on its stream goes to a second lane, "stream S #2" (tid + lane
 * << 28). Each activity whose launching CUDA call is in the trace ends that call's arrow: the
 * call's slice writes a v1 flow start ("s") with id weft_gpu_flow_id (json.c's flow code), and
 * here a flow end ("f", "bp":"e": bound to the enclosing slice) with the same id follows the
 * X event at its start (ids past 2^53 as hex strings at both ends: weft_json_put_flow_id), so chrome://tracing and Perfetto's JSON importer draw the arrow from
 * the call to the work. The events come out in time order for json.c's merge.
 */
#include "export/json-gpu.h"
#include "analysis/gpu.h"
#include "format/format.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(struct pb *b, const char *s, size_t n)
{
	pb_reserve(b, n);
	memcpy(b->p + b->n, s, n);
	b->n += n;
}
#define PUTS(b, lit) put(b, lit, sizeof(lit) - 1)

static void putf(struct pb *b, const char *fmt, unsigned long long v)
{
	char tmp[48];
	int n = snprintf(tmp, sizeof(tmp), fmt, v);
	put(b, tmp, (size_t)n);
}

/* ns -> microseconds with three decimals, as json.c writes times */
static void put_us(struct pb *b, uint64_t ns)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
	put(b, tmp, (size_t)n);
}

/* A JSON string; bytes >= 0x80 pass as they are (demangled names and CUPTI's device names
 * are ASCII; a site name is what the program gave, checked by the reader). */
static void put_str(struct pb *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	PUTS(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			put(b, e, 2);
		} else if (c < 0x20 || c == 0x7f) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			put(b, e, 6);
		} else {
			put(b, (const char *)&c, 1);
		}
	}
	PUTS(b, "\"");
}

static void arg_u(struct pb *b, const char *key, uint64_t v)
{
	PUTS(b, ",\"");
	put(b, key, strlen(key));
	putf(b, "\":%llu", v);
}

static void arg_s(struct pb *b, const char *key, const char *v)
{
	PUTS(b, ",\"");
	put(b, key, strlen(key));
	PUTS(b, "\":");
	put_str(b, v);
}

static void arg_d(struct pb *b, const char *key, double v)
{
	char tmp[64];
	int n = snprintf(tmp, sizeof(tmp), ",\"%s\":%.6g", key, v);
	put(b, tmp, (size_t)n);
}

struct lane {
	uint32_t device, stream, tid;
	size_t proc;
	unsigned lane;
};

struct build {
	struct weft_json_gpu *out;
	struct lane *lanes;
	size_t nlanes, lcap, ecap;
};

static void entry(struct build *B, uint64_t ts, size_t off)
{
	struct weft_json_gpu *g = B->out;
	if (g->n == B->ecap) {
		B->ecap = B->ecap ? B->ecap * 2 : 256;
		g->ents = realloc(g->ents, B->ecap * sizeof(*g->ents));
		if (!g->ents)
			weft_oom("writing JSON");
	}
	g->ents[g->n++] = (struct weft_json_gpu_ent){ts, off, (uint32_t)(g->text.n - off)};
}

/* The row of an activity's lane (analysis/gpu.c). */
static const struct lane *lane_of(struct build *B, size_t proc, int several, const struct weft_gpu_act *a)
{
	for (size_t i = 0; i < B->nlanes; i++) {
		const struct lane *l = &B->lanes[i];
		if (l->proc == proc && l->device == a->device && l->stream == a->stream && l->lane == a->lane)
			return l;
	}
	if (B->nlanes == B->lcap) {
		B->lcap = B->lcap ? B->lcap * 2 : 16;
		B->lanes = realloc(B->lanes, B->lcap * sizeof(*B->lanes));
		if (!B->lanes)
			weft_oom("writing JSON");
	}
	uint32_t tid = (a->stream & 0xfffff) | (several ? (uint32_t)(proc & 0xff) << 20 : 0) |
		       (uint32_t)(a->lane < 7 ? a->lane : 7) << 28;
	B->lanes[B->nlanes] = (struct lane){a->device, a->stream, tid, proc, a->lane};
	return &B->lanes[B->nlanes++];
}

static void activity(struct build *B, const struct weft_gpu_proc *gp, size_t proc, int several,
		     const struct weft_gpu_act *a)
{
	struct pb *b = &B->out->text;
	const struct weft_proc *p = gp->p;
	const struct lane *l = lane_of(B, proc, several, a);
	size_t off = b->n;
	PUTS(b, "{\"ph\":\"X\"");
	putf(b, ",\"pid\":%llu", WEFT_JSON_GPU_PID + a->device);
	putf(b, ",\"tid\":%llu", l->tid);
	PUTS(b, ",\"ts\":");
	put_us(b, a->start);
	PUTS(b, ",\"dur\":");
	put_us(b, a->end > a->start ? a->end - a->start : 0);
	char *dem = NULL, name[64];
	const char *nm = name, *cat;
	if (a->kind == WEFT_GPU_KERNEL) {
		nm = weft_gpu_kernel_name(p, a, &dem);
		cat = "gpu_kernel";
	} else if (a->kind == WEFT_GPU_MEMCPY) {
		snprintf(name, sizeof(name), "Memcpy %s", weft_gpu_copy_kind(a->copy_kind));
		cat = "gpu_memcpy";
	} else {
		snprintf(name, sizeof(name), "Memset");
		cat = "gpu_memset";
	}
	PUTS(b, ",\"name\":");
	put_str(b, nm);
	PUTS(b, ",\"cat\":\"");
	put(b, cat, strlen(cat));
	PUTS(b, "\",\"args\":{\"device\":");
	putf(b, "%llu", a->device);
	arg_u(b, "context", a->context);
	arg_u(b, "stream", a->stream);
	arg_u(b, "correlation_id", a->corr);
	if (a->kind == WEFT_GPU_KERNEL) {
		char v[96];
		snprintf(v, sizeof(v), "%u,%u,%u", a->grid[0], a->grid[1], a->grid[2]);
		arg_s(b, "grid", v);
		snprintf(v, sizeof(v), "%u,%u,%u", a->block[0], a->block[1], a->block[2]);
		arg_s(b, "block", v);
		arg_u(b, "registers_per_thread", a->regs);
		arg_u(b, "static_shared_bytes", a->static_shared);
		arg_u(b, "dynamic_shared_bytes", a->dynamic_shared);
		arg_u(b, "local_bytes_per_thread", a->local_per_thread);
		arg_u(b, "local_bytes_total", a->local_total);
		if (a->shared_executed)
			arg_u(b, "shared_bytes_per_sm", a->shared_executed);
		if (a->occupancy >= 0)
			arg_d(b, "occupancy", a->occupancy);
		if (dem)
			arg_s(b, "mangled", p->sites[a->name_site].name);
	} else {
		arg_u(b, "bytes", a->bytes);
		if (a->kind == WEFT_GPU_MEMCPY) {
			arg_s(b, "kind", weft_gpu_copy_kind(a->copy_kind));
			arg_s(b, "src_kind", weft_gpu_mem_kind(a->src_kind));
			arg_s(b, "dst_kind", weft_gpu_mem_kind(a->dst_kind));
		} else {
			arg_u(b, "value", a->value);
		}
		if (a->end > a->start)
			arg_d(b, "throughput_gbps", (double)a->bytes / (double)(a->end - a->start));
	}
	PUTS(b, "}}");
	free(dem);
	entry(B, a->start, off);
	if (!a->flow_end || !weft_gpu_launch_of(gp, a->corr))
		return; /* no call to draw the arrow from, or drawn to an earlier one (a graph's) */
	off = b->n;
	PUTS(b, "{\"ph\":\"f\",\"bp\":\"e\"");
	putf(b, ",\"pid\":%llu", WEFT_JSON_GPU_PID + a->device);
	putf(b, ",\"tid\":%llu", l->tid);
	PUTS(b, ",\"ts\":");
	put_us(b, a->start);
	PUTS(b, ",\"name\":\"flow\",\"cat\":\"flow\",\"id\":");
	weft_json_put_flow_id(b, weft_gpu_flow_id((uint32_t)p->pid, a->corr));
	PUTS(b, "}");
	entry(B, a->start, off);
}

static void meta(struct build *B, uint64_t pid, int64_t tid, const char *what, const char *name)
{
	struct pb *b = &B->out->text;
	size_t off = b->n;
	putf(b, "{\"ph\":\"M\",\"pid\":%llu", pid);
	if (tid >= 0)
		putf(b, ",\"tid\":%llu", (unsigned long long)tid);
	PUTS(b, ",\"ts\":0,\"name\":\"");
	put(b, what, strlen(what));
	PUTS(b, "\",\"args\":{\"name\":");
	put_str(b, name);
	PUTS(b, "}}");
	entry(B, 0, off);
}

static int cmp_ent(const void *a, const void *b)
{
	const struct weft_json_gpu_ent *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

int weft_json_gpu_build(const struct weft_trace *t, struct weft_json_gpu *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	struct weft_gpu *g = NULL;
	int rc = weft_gpu_analyze(t, 1, &g, err, errlen);
	if (rc || !g)
		return rc;
	size_t with = 0;
	for (size_t i = 0; i < g->nprocs; i++)
		with += g->procs[i].n != 0;
	struct build B = {.out = out};
	for (size_t i = 0; i < g->nprocs; i++)
		for (size_t k = 0; k < g->procs[i].n; k++)
			activity(&B, &g->procs[i], i, with > 1, &g->procs[i].acts[k]);
	size_t nev = out->n;
	/* names: each GPU once, then its rows */
	for (size_t i = 0; i < B.nlanes; i++) {
		const struct lane *l = &B.lanes[i];
		int seen = 0;
		for (size_t k = 0; k < i && !seen; k++)
			seen = B.lanes[k].device == l->device;
		const struct weft_proc *p = g->procs[l->proc].p;
		char name[400], who[300] = "";
		if (!seen) {
			const struct weft_gpu_device_def *d = NULL;
			for (size_t k = 0; k < g->nprocs && !d; k++)
				d = weft_gpu_device(g->procs[k].p, l->device);
			if (d && d->name[0])
				snprintf(name, sizeof(name), "GPU %u: %s", l->device, d->name);
			else
				snprintf(name, sizeof(name), "GPU %u", l->device);
			meta(&B, WEFT_JSON_GPU_PID + l->device, -1, "process_name", name);
		}
		if (with > 1)
			snprintf(who, sizeof(who), " (%s %d)", p->name ? p->name : "pid", p->pid);
		if (l->lane)
			snprintf(name, sizeof(name), "stream %u #%u%s", l->stream, l->lane + 1, who);
		else
			snprintf(name, sizeof(name), "stream %u%s", l->stream, who);
		meta(&B, WEFT_JSON_GPU_PID + l->device, l->tid, "thread_name", name);
	}
	/* the names first, then the events by time */
	out->nmeta = out->n - nev;
	struct weft_json_gpu_ent *all = malloc((out->n ? out->n : 1) * sizeof(*all));
	if (!all)
		weft_oom("writing JSON");
	if (out->nmeta)
		memcpy(all, out->ents + nev, out->nmeta * sizeof(*all));
	if (nev) {
		memcpy(all + out->nmeta, out->ents, nev * sizeof(*all));
		qsort(all + out->nmeta, nev, sizeof(*all), cmp_ent);
	}
	free(out->ents);
	out->ents = all;
	free(B.lanes);
	weft_gpu_free(g);
	return 0;
}

void weft_json_gpu_free(struct weft_json_gpu *g)
{
	free(g->text.p);
	free(g->ents);
	memset(g, 0, sizeof(*g));
}
