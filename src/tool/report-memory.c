/*
 * report-memory.c - `weft report --memory DIR`: heaptrack_print's questions answered from the
 * trace (analysis/memory.h). Per process and heap, one row per slice name (the innermost open
 * slice when the block was allocated: a function, a WEFT_SCOPE): allocations, bytes, how many
 * of them were freed (by anyone), bytes live at the heap's peak, leaked at exit, temporary
 * allocations, average size. Above each table a summary (calls to allocation functions and
 * their rate, peak heap and when, peak RSS, leaked total, unknown frees); below it, with
 * --leaks, every leaked block with its slice stack, and a size histogram. CSV gives the rows,
 * JSON everything.
 */
#include "tool/cmd.h"
#include "tool/report-memory.h"
#include "tool/shortname.h"
#include "tool/textout.h"
#include "analysis/memory.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row {
	const char *name;
	uint64_t allocs, bytes, frees, freed, peak, leaked, leaked_count, temporary;
};

static const char *const sort_keys[] = {"bytes", "allocs", "peak", "leaked", "temporary", "avg", "frees", "name"};
static int sort_key;

int weft_report_memory_sort(const char *key)
{
	for (size_t i = 0; i < sizeof(sort_keys) / sizeof(sort_keys[0]); i++)
		if (!strcmp(key, sort_keys[i])) {
			sort_key = (int)i;
			return 0;
		}
	return -1;
}

const char *weft_report_memory_sort_keys(void)
{
	return "bytes (default), allocs, peak, leaked, temporary, avg, frees, name";
}

static uint64_t sort_value(const struct row *r)
{
	switch (sort_key) {
	case 0: return r->bytes;
	case 1: return r->allocs;
	case 2: return r->peak;
	case 3: return r->leaked;
	case 4: return r->temporary;
	case 5: return r->allocs ? r->bytes / r->allocs : 0;
	case 6: return r->frees;
	default: return 0;
	}
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	uint64_t u = sort_value(x), v = sort_value(y);
	if (u != v)
		return u > v ? -1 : 1;
	return strcmp(x->name, y->name);
}

static const char *site_name(const struct weft_proc *p, uint32_t site)
{
	if (!site)
		return WEFT_MEM_NO_SLICE;
	const char *n = weft_site_name(p, site);
	return n ? n : "?";
}

/* Rows of one heap: its stacks' totals summed by the innermost slice's name. */
static struct row *rows_of(const struct weft_mem_proc *mp, const struct weft_mem_heap *h, size_t *nrows)
{
	struct row *rows = calloc(mp->nstacks + 1, sizeof(*rows));
	if (!rows)
		weft_oom("the memory report");
	size_t n = 0;
	for (size_t s = 0; s < mp->nstacks; s++) {
		const struct weft_mem_total *tt = &h->totals[s];
		if (!tt->allocs)
			continue;
		const char *name = site_name(mp->p, s ? mp->stacks[s].site : 0);
		struct row *r = NULL;
		for (size_t k = 0; k < n && !r; k++)
			if (!strcmp(rows[k].name, name))
				r = &rows[k];
		if (!r) {
			r = &rows[n++];
			r->name = name;
		}
		r->allocs += tt->allocs;
		r->bytes += tt->bytes;
		r->frees += tt->frees;
		r->freed += tt->freed;
		r->peak += tt->peak;
		r->leaked += tt->live;
		r->leaked_count += tt->leaked_count;
		r->temporary += tt->temporary;
	}
	qsort(rows, n, sizeof(*rows), cmp_row);
	*nrows = n;
	return rows;
}

/* "4.00 KiB" */
static const char *human(uint64_t b, char *buf, size_t n)
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int k = 0;
	while (v >= 1024 && k < 4) {
		v /= 1024;
		k++;
	}
	if (k)
		snprintf(buf, n, "%.2f %s", v, u[k]);
	else
		snprintf(buf, n, "%llu B", (unsigned long long)b);
	return buf;
}

static void stack_path(const struct weft_mem_proc *mp, uint32_t s, char *buf, size_t n)
{
	const char *parts[256];
	size_t k = 0;
	for (uint32_t x = s; x && k < 256; x = mp->stacks[x].parent)
		parts[k++] = site_name(mp->p, mp->stacks[x].site);
	buf[0] = 0;
	size_t o = 0;
	if (!k)
		snprintf(buf, n, WEFT_MEM_NO_SLICE);
	while (k && o + 1 < n) {
		int w = snprintf(buf + o, n - o, "%s%s", o ? " > " : "", parts[--k]);
		if (w < 0)
			break;
		o += (size_t)w;
	}
}

static const char *heap_label(const struct weft_mem_heap *h)
{
	return h->id ? h->name : "malloc";
}

static void summary_text(const struct weft_mem_proc *mp, const struct weft_mem_heap *h)
{
	const struct weft_proc *p = mp->p;
	char a[32], b[32], c[32];
	uint64_t span = mp->last_ts > mp->first_ts ? mp->last_ts - mp->first_ts : 0;
	uint64_t calls = h->alloc_calls + h->realloc_calls + h->free_calls;
	uint64_t start = p->start_ns ? p->start_ns : mp->first_ts;
	printf("# process %d %s, heap %s\n", p->pid, p->name ? p->name : "?", heap_label(h));
	/* this heap's calls only (the mmap heap's are not malloc's); frees of blocks recorded as
	 * allocated, the others on their own line below */
	printf("calls to allocation functions: %llu (%llu allocations, %llu reallocs, %llu frees)%s%.0f/s\n",
	       (unsigned long long)calls, (unsigned long long)h->alloc_calls, (unsigned long long)h->realloc_calls,
	       (unsigned long long)h->free_calls, span ? ", " : "", span ? (double)calls * 1e9 / (double)span : 0.0);
	printf("allocated: %s in %llu blocks; peak heap %s at %.6f s; leaked %s in %zu blocks\n",
	       human(h->alloc_bytes, a, sizeof(a)), (unsigned long long)h->allocs, human(h->peak, b, sizeof(b)),
	       h->peak_ts >= start ? (double)(h->peak_ts - start) / 1e9 : 0.0, human(h->live, c, sizeof(c)), h->nleaks);
	if (!h->id && p->has_rusage)
		printf("peak RSS: %s\n", human(p->max_rss, a, sizeof(a)));
	printf("frees of unknown blocks: %llu", (unsigned long long)h->unknown_frees);
	if (h->unrecorded_frees)
		printf(" (and %llu of blocks left out by threshold/sampling, expected)",
		       (unsigned long long)h->unrecorded_frees);
	if (h->foreign_frees)
		printf("; %llu munmaps of mappings the program's mmap did not make (files, libraries: not frees)",
		       (unsigned long long)h->foreign_frees);
	if (h->missed_frees)
		printf("; %llu frees not seen (an address allocated again while live)", (unsigned long long)h->missed_frees);
	printf("\n");
	if (mp->bad_records)
		printf("%llu memory records left out (an undefined heap, or more than %d heaps)\n",
		       (unsigned long long)mp->bad_records, WEFT_MEM_MAX_HEAPS);
	if (!h->id && p->mem_nested_lost)
		printf("%u allocation calls of signal handlers were dropped (they interrupted another event of their "
		       "thread)\n", p->mem_nested_lost);
	uint64_t dropped = weft_proc_dropped(p);
	if (dropped)
		printf("%llu events were dropped (%s): blocks and frees are missing, so some frees are "
		       "unknown and the figures are low\n", (unsigned long long)dropped,
		       p->mem_nested_lost ? "buffers full, or made by signal handlers inside another event"
					  : "buffers full");
	if (!h->id && p->mem_sample)
		printf("sampled: one sample per %llu bytes on average; figures are estimates scaled back\n",
		       (unsigned long long)p->mem_sample);
	if (!h->id && p->mem_not_interposed)
		printf("the program's own malloc (%s) came before weft's: its allocations are not in the trace\n",
		       p->mem_allocator ? p->mem_allocator : "?");
	else if (!h->id && p->mem_allocator)
		printf("allocator: %s\n", p->mem_allocator);
	if (!h->id && p->mem_threshold)
		printf("threshold: only blocks of at least %llu bytes were recorded\n",
		       (unsigned long long)p->mem_threshold);
}

static void table_text(const struct row *rows, size_t n, long limit, int full)
{
	printf("%12s %14s %12s %14s %14s %10s %12s %10s  %s\n", "Allocs", "Bytes", "Frees", "Peak", "Leaked",
	       "Leaked#", "Temporary", "Avg", "Slice");
	for (size_t i = 0; i < n && (limit <= 0 || (long)i < limit); i++) {
		const struct row *r = &rows[i];
		printf("%12llu %14llu %12llu %14llu %14llu %10llu %12llu %10llu  %s\n", (unsigned long long)r->allocs,
		       (unsigned long long)r->bytes, (unsigned long long)r->frees, (unsigned long long)r->peak,
		       (unsigned long long)r->leaked, (unsigned long long)r->leaked_count,
		       (unsigned long long)r->temporary, (unsigned long long)(r->allocs ? r->bytes / r->allocs : 0),
		       full || r->name[0] == '[' ? r->name : weft_short_name_whole(r->name));
	}
}

static void histogram_text(const struct weft_mem_proc *mp)
{
	printf("allocation sizes:\n");
	uint64_t max = 0;
	for (int k = 0; k < 64; k++)
		max = mp->hist[k] > max ? mp->hist[k] : max;
	for (int k = 0; k < 64; k++) {
		if (!mp->hist[k])
			continue;
		char lo[32], hi[32];
		human(k ? 1ull << (k - 1) : 0, lo, sizeof(lo));
		human(k ? (1ull << k) - 1 : 0, hi, sizeof(hi));
		int bar = (int)((double)mp->hist[k] * 40 / (double)max + 0.5);
		printf("  %10s - %-10s %10llu %.*s\n", lo, hi, (unsigned long long)mp->hist[k], bar,
		       "########################################");
	}
}

static void leaks_text(const struct weft_mem_proc *mp, const struct weft_mem_heap *h)
{
	printf("leaked blocks (%zu):\n", h->nleaks);
	for (size_t i = 0; i < h->nleaks; i++) {
		const struct weft_mem_leak *l = &h->leaks[i];
		char path[2048];
		stack_path(mp, l->stack, path, sizeof(path));
		printf("  %10llu B at 0x%llx, thread %u: %s\n", (unsigned long long)l->size, (unsigned long long)l->addr,
		       l->tid, path);
	}
}

static void json_u(const char *key, uint64_t v, int comma)
{
	printf("%s\"%s\":%llu", comma ? "," : "", key, (unsigned long long)v);
}

static void heap_json(const struct weft_mem_proc *mp, const struct weft_mem_heap *h, const struct row *rows,
		      size_t n, long limit, int leaks)
{
	printf("{\"heap\":");
	weft_json_str(heap_label(h));
	json_u("allocs", h->allocs, 1);
	json_u("alloc_bytes", h->alloc_bytes, 1);
	json_u("frees", h->frees, 1);
	json_u("freed_bytes", h->freed_bytes, 1);
	json_u("peak_bytes", h->peak, 1);
	json_u("peak_ts", h->peak_ts, 1);
	json_u("leaked_bytes", h->live, 1);
	json_u("leaked_blocks", h->nleaks, 1);
	json_u("unknown_frees", h->unknown_frees, 1);
	json_u("unrecorded_frees", h->unrecorded_frees, 1);
	json_u("missed_frees", h->missed_frees, 1);
	json_u("foreign_frees", h->foreign_frees, 1);
	json_u("alloc_calls", h->alloc_calls, 1);
	json_u("realloc_calls", h->realloc_calls, 1);
	json_u("free_calls", h->free_calls, 1);
	printf(",\"rows\":[");
	for (size_t i = 0; i < n && (limit <= 0 || (long)i < limit); i++) {
		const struct row *r = &rows[i];
		printf("%s{\"slice\":", i ? "," : "");
		weft_json_str(r->name);
		json_u("allocs", r->allocs, 1);
		json_u("bytes", r->bytes, 1);
		json_u("frees", r->frees, 1);
		json_u("freed_bytes", r->freed, 1);
		json_u("peak_bytes", r->peak, 1);
		json_u("leaked_bytes", r->leaked, 1);
		json_u("leaked_blocks", r->leaked_count, 1);
		json_u("temporary", r->temporary, 1);
		json_u("avg_bytes", r->allocs ? r->bytes / r->allocs : 0, 1);
		printf("}");
	}
	printf("]");
	if (leaks) {
		printf(",\"leaks\":[");
		for (size_t i = 0; i < h->nleaks; i++) {
			const struct weft_mem_leak *l = &h->leaks[i];
			char path[2048];
			stack_path(mp, l->stack, path, sizeof(path));
			printf("%s{", i ? "," : "");
			json_u("size", l->size, 0);
			json_u("addr", l->addr, 1);
			json_u("tid", l->tid, 1);
			json_u("ts", l->ts, 1);
			printf(",\"stack\":");
			weft_json_str(path);
			printf("}");
		}
		printf("]");
	}
	printf("}");
}

int weft_report_memory(const struct weft_trace *t, int fmt, long limit, int leaks, int full_names)
{
	struct weft_mem *m;
	char err[256];
	if (weft_mem_analyze(t, &m, err, sizeof(err))) {
		weft_cli_error("report", "%s", err);
		return WEFT_EXIT_FAIL;
	}
	size_t shown = 0;
	if (fmt == 1)
		printf("pid,heap,slice,allocs,bytes,frees,freed_bytes,peak_bytes,leaked_bytes,leaked_blocks,temporary,avg_bytes\n");
	else if (fmt == 2)
		printf("[");
	for (size_t i = 0; i < m->nprocs; i++) {
		const struct weft_mem_proc *mp = weft_mem_for(m, &t->procs[i]);
		if (!mp)
			continue;
		const struct weft_proc *p = mp->p;
		if (fmt == 2) {
			printf("%s{\"pid\":%d,\"name\":", shown ? ",\n" : "", p->pid);
			weft_json_str(p->name ? p->name : "");
			json_u("alloc_calls", mp->alloc_calls, 1);
			json_u("realloc_calls", mp->realloc_calls, 1);
			json_u("free_calls", mp->free_calls, 1);
			json_u("span_ns", mp->last_ts - mp->first_ts, 1);
			if (p->has_rusage)
				json_u("max_rss_bytes", p->max_rss, 1);
			json_u("sample_bytes", p->mem_sample, 1);
			json_u("threshold_bytes", p->mem_threshold, 1);
			printf(",\"histogram\":[");
			int first = 1;
			for (int k = 0; k < 64; k++)
				if (mp->hist[k]) {
					printf("%s{\"min\":%llu,\"max\":%llu,\"count\":%llu}", first ? "" : ",",
					       k ? 1ull << (k - 1) : 0ull, k ? (1ull << k) - 1 : 0ull,
					       (unsigned long long)mp->hist[k]);
					first = 0;
				}
			printf("],\"heaps\":[");
		}
		shown++;
		for (size_t k = 0; k < mp->nheaps; k++) {
			const struct weft_mem_heap *h = &mp->heaps[k];
			size_t n;
			struct row *rows = rows_of(mp, h, &n);
			if (fmt == 0) {
				printf("%s", shown > 1 || k ? "\n" : "");
				summary_text(mp, h);
				printf("\n");
				table_text(rows, n, limit, full_names);
				if (leaks && h->nleaks) {
					printf("\n");
					leaks_text(mp, h);
				}
			} else if (fmt == 1) {
				for (size_t r = 0; r < n && (limit <= 0 || (long)r < limit); r++) {
					const struct row *w = &rows[r];
					printf("%d,", p->pid);
					weft_csv_str(heap_label(h));
					putchar(',');
					weft_csv_str(w->name);
					printf(",%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)w->allocs,
					       (unsigned long long)w->bytes, (unsigned long long)w->frees,
					       (unsigned long long)w->freed, (unsigned long long)w->peak,
					       (unsigned long long)w->leaked, (unsigned long long)w->leaked_count,
					       (unsigned long long)w->temporary,
					       (unsigned long long)(w->allocs ? w->bytes / w->allocs : 0));
				}
			} else {
				if (k)
					printf(",");
				heap_json(mp, h, rows, n, limit, leaks);
			}
			free(rows);
		}
		if (fmt == 0) {
			printf("\n");
			histogram_text(mp);
		}
		if (fmt == 2)
			printf("]}");
	}
	if (fmt == 2)
		printf("]\n");
	if (!shown) {
		char why[512];
		weft_cli_error("report", "%s", weft_mem_why_none(t, 0, why, sizeof(why)));
	}
	weft_mem_free(m);
	return shown ? WEFT_EXIT_OK : WEFT_EXIT_FAIL;
}
