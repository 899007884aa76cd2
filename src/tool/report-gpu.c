/*
 * report-gpu.c - `weft report --gpu`: for a trace recorded with --gpu, per process what the
 * GPU did (analysis/gpu.h). A header line gives the collector's own word (its library, or why
 * it was unavailable), the records it wrote, the records CUPTI dropped and the clock map (points
 * used of those written, and the largest distance of a used point from the fitted line). Then
 * one row per kernel name (demangled and shortened as the time report does): launches, total,
 * average and maximum device time, the average theoretical occupancy of its launches, and the
 * largest registers per thread and shared memory per block (static + dynamic) it ran with; one
 * row per copy kind (HtoD, DtoH, ...) and one for memsets: count, bytes, device time and
 * throughput (bytes per device ns = GB/s); and the launch latency, from the launching CUDA
 * call's slice begin to the activity's device start on the trace's clock, as count, min, p50,
 * p90, p99 and max (nearest-rank percentiles). CSV gives the rows, JSON everything.
 */
#include "tool/cmd.h"
#include "tool/report-gpu.h"
#include "tool/shortname.h"
#include "tool/textout.h"
#include "analysis/gpu.h"
#include "format/format.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct krow {
	char *name; /* shown name (malloc'd) */
	uint64_t launches, total, max;
	double occ_sum;
	uint64_t occ_n;
	uint32_t regs, shared;
};

struct crow {
	const char *kind;
	uint64_t count, bytes, total;
};

struct lat {
	uint64_t count;
	int64_t min, p50, p90, p99, max;
};

/* A column header in its unit (weft_unit_for: one per column, from its largest value). */
static void col(const char *what, struct weft_unit u)
{
	char t[32];
	snprintf(t, sizeof(t), "%s (%s)", what, u.name);
	printf("  %12s", t);
}

static int cmp_krow(const void *a, const void *b)
{
	const struct krow *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t dur(const struct weft_gpu_act *a)
{
	return a->end > a->start ? a->end - a->start : 0;
}

static struct krow *kernel_rows(const struct weft_gpu_proc *gp, int full_names, size_t *nrows)
{
	struct krow *rows = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < gp->n; i++) {
		const struct weft_gpu_act *a = &gp->acts[i];
		if (a->kind != WEFT_GPU_KERNEL)
			continue;
		char *dem;
		const char *nm = weft_gpu_kernel_name(gp->p, a, &dem);
		if (!full_names)
			nm = weft_short_name_whole(nm);
		struct krow *r = NULL;
		for (size_t k = 0; k < n && !r; k++) /* few kernel names in a program: linear is fine */
			if (!strcmp(rows[k].name, nm))
				r = &rows[k];
		if (!r) {
			if (n == cap) {
				cap = cap ? cap * 2 : 32;
				rows = realloc(rows, cap * sizeof(*rows));
				if (!rows)
					weft_oom("the GPU report");
			}
			r = &rows[n++];
			memset(r, 0, sizeof(*r));
			if (!(r->name = strdup(nm)))
				weft_oom("the GPU report");
		}
		free(dem);
		uint64_t d = dur(a);
		r->launches++;
		r->total += d;
		r->max = d > r->max ? d : r->max;
		if (a->occupancy >= 0) {
			r->occ_sum += a->occupancy;
			r->occ_n++;
		}
		r->regs = a->regs > r->regs ? a->regs : r->regs;
		uint32_t sh = a->static_shared + a->dynamic_shared;
		r->shared = sh > r->shared ? sh : r->shared;
	}
	if (n)
		qsort(rows, n, sizeof(*rows), cmp_krow);
	*nrows = n;
	return rows;
}

/* Copies by kind in CUPTI's order, then memsets. */
static size_t copy_rows(const struct weft_gpu_proc *gp, struct crow *rows)
{
	struct crow all[12];
	memset(all, 0, sizeof(all));
	for (size_t i = 0; i < gp->n; i++) {
		const struct weft_gpu_act *a = &gp->acts[i];
		struct crow *r;
		if (a->kind == WEFT_GPU_MEMCPY)
			r = &all[a->copy_kind <= 10 ? a->copy_kind : 0];
		else if (a->kind == WEFT_GPU_MEMSET)
			r = &all[11];
		else
			continue;
		r->count++;
		r->bytes += a->bytes;
		r->total += dur(a);
	}
	size_t n = 0;
	/* the common kinds first, unknown last, then memsets */
	static const unsigned order[12] = {1, 2, 8, 9, 10, 3, 4, 5, 6, 7, 0, 11};
	for (unsigned i = 0; i < 12; i++) {
		unsigned k = order[i];
		if (!all[k].count)
			continue;
		rows[n] = all[k];
		rows[n++].kind = k == 11 ? "memset" : weft_gpu_copy_kind(k);
	}
	return n;
}

static int64_t rank(const int64_t *v, size_t n, unsigned pct)
{
	size_t r = (n * pct + 99) / 100; /* nearest rank: the smallest value with pct% at or below it */
	return v[r ? r - 1 : 0];
}

static struct lat latency(const struct weft_gpu_proc *gp)
{
	struct lat l;
	memset(&l, 0, sizeof(l));
	int64_t *v = gp->n ? malloc(gp->n * sizeof(*v)) : NULL;
	if (gp->n && !v)
		weft_oom("the GPU report");
	size_t n = 0;
	for (size_t i = 0; i < gp->n; i++) {
		const struct weft_gpu_launch *L = weft_gpu_launch_of(gp, gp->acts[i].corr);
		if (L)
			v[n++] = (int64_t)(gp->acts[i].start - L->ts);
	}
	if (n) {
		qsort(v, n, sizeof(*v), cmp_i64);
		l = (struct lat){n, v[0], rank(v, n, 50), rank(v, n, 90), rank(v, n, 99), v[n - 1]};
	}
	free(v);
	return l;
}

static void header_text(const struct weft_gpu_proc *gp)
{
	const struct weft_proc *p = gp->p;
	printf("# process %d %s: GPU %s; %llu records, %llu dropped by CUPTI, %zu of %zu clock points used, clock fit "
	       "residual %.0f ns\n", p->pid, p->name ? p->name : "?", p->gpu_text[0] ? p->gpu_text : "(no word)",
	       (unsigned long long)p->gpu_records, (unsigned long long)p->gpu_dropped, gp->clock_points, p->ngpu_clock,
	       gp->clock_residual_ns);
	for (size_t k = 0; k < p->ngpu_devices; k++) {
		const struct weft_gpu_device_def *d = &p->gpu_devices[k];
		printf("# GPU %u: %s, %u SMs, compute capability %u.%u, %.1f GiB\n", d->id, d->name[0] ? d->name : "?",
		       d->sms, d->cc_major, d->cc_minor, (double)d->global_mem / 1073741824.0);
	}
}

static void kernels_text(const struct krow *rows, size_t n, long limit)
{
	uint64_t mx[3] = {0, 0, 0};
	for (size_t i = 0; i < n && (limit <= 0 || (long)i < limit); i++) {
		uint64_t v[3] = {rows[i].total, rows[i].total / rows[i].launches, rows[i].max};
		for (int m = 0; m < 3; m++)
			mx[m] = v[m] > mx[m] ? v[m] : mx[m];
	}
	struct weft_unit u[3] = {weft_unit_for(mx[0]), weft_unit_for(mx[1]), weft_unit_for(mx[2])};
	printf("%9s", "Launches");
	col("Total", u[0]);
	col("Average", u[1]);
	col("Maximum", u[2]);
	printf("  %9s  %9s  %10s  Kernel\n", "Occupancy", "Registers", "Shared (B)");
	for (size_t i = 0; i < n && (limit <= 0 || (long)i < limit); i++) {
		const struct krow *r = &rows[i];
		uint64_t v[3] = {r->total, r->total / r->launches, r->max};
		printf("%9llu", (unsigned long long)r->launches);
		for (int m = 0; m < 3; m++)
			printf("  %12.*f", u[m].decimals, (double)v[m] / u[m].div);
		if (r->occ_n)
			printf("  %9.2f", r->occ_sum / (double)r->occ_n);
		else
			printf("  %9s", "-");
		printf("  %9u  %10u  %s\n", r->regs, r->shared, r->name);
	}
}

static double gbps(const struct crow *r)
{
	return r->total ? (double)r->bytes / (double)r->total : 0; /* bytes per ns = GB/s */
}

static void copies_text(const struct crow *rows, size_t n)
{
	uint64_t mx = 0;
	for (size_t i = 0; i < n; i++)
		mx = rows[i].total > mx ? rows[i].total : mx;
	struct weft_unit u = weft_unit_for(mx);
	printf("%9s  %14s", "Count", "Bytes");
	col("Total", u);
	printf("  %9s  Copy\n", "GB/s");
	for (size_t i = 0; i < n; i++)
		printf("%9llu  %14llu  %12.*f  %9.2f  %s\n", (unsigned long long)rows[i].count,
		       (unsigned long long)rows[i].bytes, u.decimals, (double)rows[i].total / u.div, gbps(&rows[i]),
		       rows[i].kind);
}

static void latency_text(const struct lat *l)
{
	if (!l->count) {
		printf("launch latency: no launching CUDA call found\n");
		return;
	}
	printf("launch latency (CUDA call to device start, us): %llu launches, min %.3f, p50 %.3f, p90 %.3f, p99 %.3f, "
	       "max %.3f\n", (unsigned long long)l->count, (double)l->min / 1e3, (double)l->p50 / 1e3,
	       (double)l->p90 / 1e3, (double)l->p99 / 1e3, (double)l->max / 1e3);
}

static void proc_json(const struct weft_gpu_proc *gp, const struct krow *k, size_t nk, long limit,
		      const struct crow *c, size_t nc, const struct lat *l)
{
	const struct weft_proc *p = gp->p;
	printf("{\"pid\":%d,\"name\":", p->pid);
	weft_json_str(p->name ? p->name : "");
	printf(",\"gpu\":");
	weft_json_str(p->gpu_text);
	printf(",\"records\":%llu,\"dropped\":%llu,\"activities\":%zu,\"clock_points\":%zu,\"clock_points_used\":%zu,"
	       "\"clock_residual_ns\":%.0f,\"devices\":[", (unsigned long long)p->gpu_records,
	       (unsigned long long)p->gpu_dropped, gp->n, p->ngpu_clock, gp->clock_points, gp->clock_residual_ns);
	for (size_t i = 0; i < p->ngpu_devices; i++) {
		const struct weft_gpu_device_def *d = &p->gpu_devices[i];
		printf("%s{\"id\":%u,\"name\":", i ? "," : "", d->id);
		weft_json_str(d->name);
		printf(",\"sms\":%u,\"compute_capability\":\"%u.%u\",\"memory_bytes\":%llu}", d->sms, d->cc_major,
		       d->cc_minor, (unsigned long long)d->global_mem);
	}
	printf("],\"kernels\":[");
	for (size_t i = 0; i < nk && (limit <= 0 || (long)i < limit); i++) {
		const struct krow *r = &k[i];
		printf("%s{\"kernel\":", i ? "," : "");
		weft_json_str(r->name);
		printf(",\"launches\":%llu,\"total_ns\":%llu,\"avg_ns\":%llu,\"max_ns\":%llu,\"occupancy\":",
		       (unsigned long long)r->launches, (unsigned long long)r->total,
		       (unsigned long long)(r->total / r->launches), (unsigned long long)r->max);
		if (r->occ_n)
			printf("%.4f", r->occ_sum / (double)r->occ_n);
		else
			printf("null");
		printf(",\"registers\":%u,\"shared_bytes\":%u}", r->regs, r->shared);
	}
	printf("],\"copies\":[");
	for (size_t i = 0; i < nc; i++)
		printf("%s{\"kind\":\"%s\",\"count\":%llu,\"bytes\":%llu,\"total_ns\":%llu,\"gbps\":%.4f}", i ? "," : "",
		       c[i].kind, (unsigned long long)c[i].count, (unsigned long long)c[i].bytes,
		       (unsigned long long)c[i].total, gbps(&c[i]));
	printf("],\"launch_latency_ns\":{\"count\":%llu,\"min\":%lld,\"p50\":%lld,\"p90\":%lld,\"p99\":%lld,\"max\":%lld}}",
	       (unsigned long long)l->count, (long long)l->min, (long long)l->p50, (long long)l->p90, (long long)l->p99,
	       (long long)l->max);
}

/* The one line for a trace without GPU activity. */
static void none(const struct weft_trace *t, int fmt)
{
	const struct weft_proc *why = NULL, *ran = NULL;
	for (size_t i = 0; i < t->nprocs; i++) {
		if (t->procs[i].has_gpu && t->procs[i].gpu_state == 0 && !why)
			why = &t->procs[i];
		if (t->procs[i].has_gpu && t->procs[i].gpu_state == 1 && !ran)
			ran = &t->procs[i];
	}
	char line[700];
	if (ran)
		snprintf(line, sizeof(line), "no GPU activity in the trace: the GPU collector ran (%s) but recorded no "
			 "kernel, copy or memset", ran->gpu_text);
	else if (why)
		snprintf(line, sizeof(line), "no GPU activity in the trace: the GPU collector was unavailable: %s",
			 why->gpu_text[0] ? why->gpu_text : "no reason given");
	else
		snprintf(line, sizeof(line), "no GPU activity in the trace (record with 'weft record --gpu')");
	if (fmt == 2) {
		printf("[]\n");
		weft_cli_error("report", "%s", line);
	} else if (fmt == 1) {
		printf("pid,section,name,count,total_ns,avg_ns,max_ns,occupancy,registers,shared_bytes,bytes,gbps\n");
		weft_cli_error("report", "%s", line);
	} else {
		printf("%s\n", line);
	}
}

int weft_report_gpu(const struct weft_trace *t, int fmt, long limit, int full_names)
{
	struct weft_gpu *g;
	char err[256];
	if (weft_gpu_analyze(t, 1, &g, err, sizeof(err))) {
		weft_cli_error("report", "%s", err);
		return WEFT_EXIT_FAIL;
	}
	size_t any = 0;
	for (size_t i = 0; g && i < g->nprocs; i++)
		any += g->procs[i].n;
	if (!any) {
		none(t, fmt);
		weft_gpu_free(g);
		return WEFT_EXIT_OK;
	}
	if (fmt == 1)
		printf("pid,section,name,count,total_ns,avg_ns,max_ns,occupancy,registers,shared_bytes,bytes,gbps\n");
	else if (fmt == 2)
		printf("[");
	size_t shown = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_gpu_proc *gp = weft_gpu_for(g, &t->procs[i]);
		if (!gp || !gp->n)
			continue;
		size_t nk, nc;
		struct krow *k = kernel_rows(gp, full_names, &nk);
		struct crow c[12];
		nc = copy_rows(gp, c);
		struct lat l = latency(gp);
		if (fmt == 0) {
			if (shown)
				printf("\n");
			header_text(gp);
			if (nk) {
				printf("\n");
				kernels_text(k, nk, limit);
			}
			if (nc) {
				printf("\n");
				copies_text(c, nc);
			}
			printf("\n");
			latency_text(&l);
		} else if (fmt == 1) {
			for (size_t r = 0; r < nk && (limit <= 0 || (long)r < limit); r++) {
				printf("%d,kernel,", gp->p->pid);
				weft_csv_str(k[r].name);
				printf(",%llu,%llu,%llu,%llu,", (unsigned long long)k[r].launches, (unsigned long long)k[r].total,
				       (unsigned long long)(k[r].total / k[r].launches), (unsigned long long)k[r].max);
				if (k[r].occ_n)
					printf("%.4f", k[r].occ_sum / (double)k[r].occ_n);
				printf(",%u,%u,,\n", k[r].regs, k[r].shared);
			}
			for (size_t r = 0; r < nc; r++)
				printf("%d,copy,%s,%llu,%llu,%llu,,,,,%llu,%.4f\n", gp->p->pid, c[r].kind,
				       (unsigned long long)c[r].count, (unsigned long long)c[r].total,
				       (unsigned long long)(c[r].total / c[r].count), (unsigned long long)c[r].bytes, gbps(&c[r]));
		} else {
			if (shown)
				printf(",\n");
			proc_json(gp, k, nk, limit, c, nc, &l);
		}
		shown++;
		for (size_t r = 0; r < nk; r++)
			free(k[r].name);
		free(k);
	}
	if (fmt == 2)
		printf("]\n");
	weft_gpu_free(g);
	return WEFT_EXIT_OK;
}
