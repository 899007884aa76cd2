/*
 * top-view.c - one frame of `weft top` (docs/top.md) from two samples: per process (rank and
 * host in a job) and per thread, the rates over the interval (events, calls, self time, the
 * share of time in MPI) and the totals since the watch began, the slices open now (innermost
 * last), and the functions and slices with the most self time; in a job, which rank the
 * others wait for. Written as a table for the terminal (cut to its size), as CSV rows (one
 * header, a `table` column: process, thread, function) or as one JSON object per frame.
 */
#include "tool/top.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const top_sort_names[TOP_NSORT] = {"self", "calls", "events", "name"};

/* ---- the frame's rows ---- */

struct prow { /* a process */
	const struct top_proc *p;
	double dt;            /* s; 0: no interval */
	double ev_s, calls_s, mpi_pct;
	double cpu_pct;       /* its threads' (that weft records), -1: unknown */
	uint64_t calls;
	int threads;
	const struct top_thread *main; /* its main thread, or the first alive */
};
struct trow {
	const struct top_proc *p;
	const struct top_thread *t;
	double dt, ev_s, calls_s, mpi_pct;
	double cpu_pct; /* -1: unknown */
};
struct frow {
	const char *name;
	double self_pct, calls_s;
	uint64_t self_ns, calls;
	int threads;
};

struct frame {
	struct prow *pr;
	size_t npr;
	struct trow *tr;
	size_t ntr;
	struct frow *fr;
	size_t nfr;
	int have_dt;
	double dt; /* the interval (of the first process), s */
};

static const struct top_proc *find_proc(const struct top_sample *s, int pid)
{
	for (size_t i = 0; s && i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

static const struct top_thread *find_thread(const struct top_proc *p, unsigned serial, int tid)
{
	for (size_t i = 0; p && i < p->nthreads; i++)
		if (p->threads[i].serial == serial && p->threads[i].tid == tid)
			return &p->threads[i];
	return NULL;
}

static const struct top_func *find_func(const struct top_thread *t, const char *name)
{
	for (size_t i = 0; t && i < t->nfuncs; i++)
		if (!strcmp(t->funcs[i].name, name))
			return &t->funcs[i];
	return NULL;
}

static int proc_passes(const struct top_view *v, const struct top_proc *p)
{
	const char *f = v->filter;
	if (!f || !*f)
		return 1;
	if (!strncmp(f, "rank=", 5))
		return p->rank == atoi(f + 5);
	if (!strncmp(f, "pid=", 4))
		return p->pid == atoi(f + 4);
	if (!strncmp(f, "tid=", 4)) {
		for (size_t i = 0; i < p->nthreads; i++)
			if (p->threads[i].tid == atoi(f + 4))
				return 1;
		return 0;
	}
	if (strstr(p->comm, f) || strstr(p->host, f))
		return 1;
	for (size_t i = 0; i < p->nthreads; i++)
		if (strstr(p->threads[i].name, f))
			return 1;
	return 0;
}

static int thread_passes(const struct top_view *v, const struct top_proc *p, const struct top_thread *t)
{
	const char *f = v->filter;
	if (!f || !*f || !strncmp(f, "rank=", 5) || !strncmp(f, "pid=", 4))
		return 1;
	if (!strncmp(f, "tid=", 4))
		return t->tid == atoi(f + 4);
	return strstr(p->comm, f) || strstr(p->host, f) || strstr(t->name, f);
}

static double rate(uint64_t now, uint64_t before, double dt)
{
	return dt > 0 && now >= before ? (double)(now - before) / dt : 0;
}

static enum top_sort sort_key; /* for the comparisons below (qsort has no argument) */

static int cmp_f(const void *a, const void *b)
{
	const struct frow *x = a, *y = b;
	double kx, ky;
	switch (sort_key) {
	case TOP_SORT_NAME: return strcmp(x->name, y->name);
	case TOP_SORT_CALLS: kx = x->calls_s ? x->calls_s : (double)x->calls * 1e-12;
		ky = y->calls_s ? y->calls_s : (double)y->calls * 1e-12; break;
	default: kx = x->self_pct + (double)x->self_ns * 1e-15; ky = y->self_pct + (double)y->self_ns * 1e-15; break;
	}
	return kx < ky ? 1 : kx > ky ? -1 : strcmp(x->name, y->name);
}

static int cmp_t(const void *a, const void *b)
{
	const struct trow *x = a, *y = b;
	if (sort_key == TOP_SORT_NAME) {
		int c = strcmp(x->t->name, y->t->name);
		return c ? c : x->t->tid - y->t->tid;
	}
	double kx = sort_key == TOP_SORT_CALLS ? x->calls_s : x->ev_s, ky = sort_key == TOP_SORT_CALLS ? y->calls_s : y->ev_s;
	if (kx != ky)
		return kx < ky ? 1 : -1;
	if (x->p->rank != y->p->rank)
		return x->p->rank - y->p->rank;
	return x->p->pid != y->p->pid ? x->p->pid - y->p->pid : x->t->tid - y->t->tid;
}

static int cmp_p(const void *a, const void *b)
{
	const struct prow *x = a, *y = b;
	if (x->p->rank != y->p->rank)
		return x->p->rank - y->p->rank;
	return x->p->pid - y->p->pid;
}

static void frame_free(struct frame *fr)
{
	free(fr->pr);
	free(fr->tr);
	free(fr->fr);
}

static int frame_make(const struct top_view *v, const struct top_sample *before, const struct top_sample *now,
		      struct frame *fr)
{
	memset(fr, 0, sizeof(*fr));
	size_t nthreads = 0;
	for (size_t i = 0; i < now->nprocs; i++)
		nthreads += now->procs[i].nthreads;
	fr->pr = calloc(now->nprocs + 1, sizeof(*fr->pr));
	fr->tr = calloc(nthreads + 1, sizeof(*fr->tr));
	size_t fcap = 64;
	fr->fr = calloc(fcap, sizeof(*fr->fr));
	if (!fr->pr || !fr->tr || !fr->fr)
		return -1;
	for (size_t i = 0; i < now->nprocs; i++) {
		const struct top_proc *p = &now->procs[i], *b = find_proc(before, p->pid);
		if (!proc_passes(v, p))
			continue;
		struct prow *r = &fr->pr[fr->npr++];
		r->cpu_pct = -1;
		r->p = p;
		r->dt = now->ended ? now->span_s : b && p->now_ns > b->now_ns ? (double)(p->now_ns - b->now_ns) / 1e9 : 0;
		if (r->dt > 0 && !fr->have_dt) {
			fr->have_dt = 1;
			fr->dt = r->dt;
		}
		uint64_t calls = 0;
		double mpi = 0;
		for (size_t k = 0; k < p->nthreads; k++) {
			const struct top_thread *t = &p->threads[k], *tb = find_thread(b, t->serial, t->tid);
			calls += t->calls;
			if (t->alive || now->ended)
				r->threads++;
			if (!r->main || (t->tid == p->pid && t->alive))
				r->main = t;
			/* a thread's numbers cover the time up to its asof (its writer may be behind) */
			double tdt = !now->ended && tb && t->asof_ns > tb->asof_ns ? (double)(t->asof_ns - tb->asof_ns) / 1e9
										  : r->dt;
			double m = now->ended ? (tdt > 0 ? (double)t->mpi_ns / 1e9 / tdt : 0)
					      : (tb && tdt > 0 && t->mpi_ns >= tb->mpi_ns ? (double)(t->mpi_ns - tb->mpi_ns) / 1e9 / tdt : 0);
			if (m > mpi)
				mpi = m;
			double tev_s = now->ended ? (r->dt > 0 ? (double)t->events / r->dt : 0) : tb ? rate(t->events, tb->events, tdt) : 0;
			double tcalls_s = now->ended ? (r->dt > 0 ? (double)t->calls / r->dt : 0) : tb ? rate(t->calls, tb->calls, tdt) : 0;
			r->ev_s += tev_s; /* the process's: its threads' over their own intervals */
			r->calls_s += tcalls_s;
			if (!thread_passes(v, p, t))
				continue;
			struct trow *tr = &fr->tr[fr->ntr++];
			tr->p = p;
			tr->t = t;
			tr->dt = tdt;
			tr->ev_s = tev_s;
			tr->calls_s = tcalls_s;
			tr->mpi_pct = 100 * m;
			tr->cpu_pct = tb && tb->cpu_ns && t->cpu_ns >= tb->cpu_ns && r->dt > 0
					      ? 100.0 * (double)(t->cpu_ns - tb->cpu_ns) / 1e9 / r->dt : -1;
			if (tr->cpu_pct >= 0)
				r->cpu_pct = (r->cpu_pct < 0 ? 0 : r->cpu_pct) + tr->cpu_pct;
			/* its functions, merged by name over the threads shown */
			for (size_t j = 0; j < t->nfuncs; j++) {
				const struct top_func *f = &t->funcs[j], *fb = tb ? find_func(tb, f->name) : NULL;
				size_t x;
				for (x = 0; x < fr->nfr && strcmp(fr->fr[x].name, f->name); x++)
					;
				if (x == fr->nfr) {
					if (fr->nfr == fcap) {
						struct frow *nf = realloc(fr->fr, fcap * 2 * sizeof(*nf));
						if (!nf)
							return -1;
						fr->fr = nf;
						fcap *= 2;
					}
					fr->fr[fr->nfr++] = (struct frow){.name = f->name};
				}
				struct frow *o = &fr->fr[x];
				o->self_ns += f->self_ns;
				o->calls += f->calls;
				o->threads++;
				if (now->ended) {
					o->self_pct += r->dt > 0 ? 100.0 * (double)f->self_ns / 1e9 / r->dt : 0;
					o->calls_s += r->dt > 0 ? (double)f->calls / r->dt : 0;
				} else if (tdt > 0) {
					/* a function (or thread) not in the sample before: all it did is new */
					uint64_t sb = fb ? fb->self_ns : 0, cb = fb ? fb->calls : 0;
					o->self_pct += 100.0 * rate(f->self_ns, sb, tdt) / 1e9;
					o->calls_s += rate(f->calls, cb, tdt);
				}
			}
		}
		r->calls = calls;
		r->mpi_pct = 100 * mpi;
	}
	sort_key = v->sort;
	qsort(fr->pr, fr->npr, sizeof(*fr->pr), cmp_p);
	qsort(fr->tr, fr->ntr, sizeof(*fr->tr), cmp_t);
	qsort(fr->fr, fr->nfr, sizeof(*fr->fr), cmp_f);
	return 0;
}

/* ---- which rank the others wait for ---- */

static int in_mpi(const struct top_thread *t)
{
	return t && t->nstack && !strncmp(t->stack[t->nstack - 1].name, "MPI_", 4);
}

/* One line (into out) on a job's waiting, or "" when there is nothing to say. */
static void waiting_line(const struct frame *fr, int have_rates, char *out, size_t n)
{
	out[0] = 0;
	size_t ranks = 0, inside = 0;
	const struct prow *low = NULL, *outside = NULL;
	double sum = 0;
	for (size_t i = 0; i < fr->npr; i++) {
		const struct prow *r = &fr->pr[i];
		if (r->p->rank < 0)
			continue;
		ranks++;
		sum += r->mpi_pct;
		if (!low || r->mpi_pct < low->mpi_pct)
			low = r;
		if (in_mpi(r->main))
			inside++;
		else
			outside = r;
	}
	if (ranks < 2)
		return;
	if (inside == ranks - 1 && outside) { /* now: all but one are in MPI */
		const struct top_thread *m = outside->main;
		snprintf(out, n, "waiting now: %zu of %zu ranks are in MPI calls, waiting for rank %d (in %s)", inside,
			 ranks, outside->p->rank, m && m->nstack ? m->stack[m->nstack - 1].name : "no recorded call");
		return;
	}
	if (!have_rates || !low)
		return;
	double others = (sum - low->mpi_pct) / (double)(ranks - 1);
	if (others - low->mpi_pct >= 20)
		snprintf(out, n, "waited for: rank %d (%.0f%% of its time in MPI, the other ranks %.0f%% on average)",
			 low->p->rank, low->mpi_pct, others);
}

/* ---- text ---- */

static void human(double v, char *out, size_t n)
{
	if (v >= 1e9)
		snprintf(out, n, "%.1fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(out, n, "%.1fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(out, n, "%.1fk", v / 1e3);
	else
		snprintf(out, n, "%.0f", v);
}

static void bytes(uint64_t v, char *out, size_t n)
{
	if (v >= 1ull << 30)
		snprintf(out, n, "%.1fG", (double)v / (1 << 30));
	else if (v >= 1ull << 20)
		snprintf(out, n, "%.1fM", (double)v / (1 << 20));
	else if (v >= 1ull << 10)
		snprintf(out, n, "%.1fK", (double)v / (1 << 10));
	else
		snprintf(out, n, "%lluB", (unsigned long long)v);
}

/* The stack as "a > b > c", cut at its left to fit w columns ("... > c"). */
static void stack_text(const struct top_thread *t, char *out, size_t n, int w)
{
	out[0] = 0;
	if (!t || !t->nstack) {
		snprintf(out, n, "%s", t && t->depth ? "(open slices not kept)" : "-");
		return;
	}
	size_t l = 0;
	for (size_t i = 0; i < t->nstack && l + 1 < n; i++)
		l += (size_t)snprintf(out + l, n - l, "%s%s", i ? " > " : "", t->stack[i].name);
	if (l >= n)
		l = n - 1;
	if (w > 8 && l > (size_t)w) {
		size_t cut = l - (size_t)w + 4;
		memmove(out + 4, out + cut, l - cut + 1);
		memcpy(out, "... ", 4);
	}
}

static void line_cut(FILE *f, const char *s, int width)
{
	int w = width > 0 ? width : 100000;
	fprintf(f, "%.*s\n", w, s);
}

static void print_text(FILE *f, const struct top_view *v, const struct top_sample *now, const struct frame *fr)
{
	char l[4096], a[32], b[32], c[32], d[32];
	int W = v->width > 20 ? v->width : 0, rows = v->height > 5 ? v->height : 0, used = 0;
	uint64_t ev = 0, drop = 0;
	for (size_t i = 0; i < fr->npr; i++) {
		ev += fr->pr[i].p->events;
		drop += fr->pr[i].p->dropped;
	}
	size_t nthreads = 0;
	for (size_t i = 0; i < fr->npr; i++)
		nthreads += (size_t)fr->pr[i].threads;
	if (now->ended)
		snprintf(l, sizeof(l), "weft top - %s - the run has ended: final totals over %.2f s (no recorder runs)", v->dir,
			 now->span_s);
	else
		snprintf(l, sizeof(l), "weft top - %s - %zu process%s, %zu thread%s, %d recorder%s - %s%s", v->dir, fr->npr,
			 fr->npr == 1 ? "" : "es", nthreads, nthreads == 1 ? "" : "s", now->recorders,
			 now->recorders == 1 ? "" : "s", fr->have_dt ? "" : "first sample",
			 v->paused ? " - PAUSED" : "");
	if (!now->ended && fr->have_dt) {
		size_t k = strlen(l);
		snprintf(l + k, sizeof(l) - k, "interval %.2f s", fr->dt);
	}
	line_cut(f, l, W), used++;
	human((double)ev, a, sizeof(a));
	snprintf(l, sizeof(l), "events written %s, dropped %llu - sort: %s - filter: %s%s", a, (unsigned long long)drop,
		 top_sort_names[v->sort], v->filter && *v->filter ? v->filter : "none",
		 now->ended ? "" : " - keys: s sort, f filter, p pause, q quit");
	line_cut(f, l, W), used++;
	char wl[512];
	waiting_line(fr, fr->have_dt, wl, sizeof(wl));
	if (wl[0])
		line_cut(f, wl, W), used++;
	if (now->elsewhere) {
		snprintf(l, sizeof(l), "not shown: %d recorder%s of the job on other hosts (%s): weft top reaches this "
			 "host's; run it there too", now->elsewhere, now->elsewhere == 1 ? "" : "s", now->other_hosts);
		line_cut(f, l, W), used++;
	}
	fputc('\n', f), used++;
	/* processes: a table when several (a job), else one line */
	snprintf(l, sizeof(l), "%7s %5s %-12s %-14s %4s %5s %8s %8s %8s %8s %5s%s %s", "PID", "RANK", "HOST", "PROCESS",
		 "THR", "CPU%", "EVENTS/s", "CALLS/s", "CALLS", "DROPPED", "MPI%", v->memory ? "     HEAP" : "", "NOW (innermost last)");
	line_cut(f, l, W), used++;
	for (size_t i = 0; i < fr->npr; i++) {
		const struct prow *r = &fr->pr[i];
		if (rows && used >= rows / 3 + 4 && i + 1 < fr->npr) {
			snprintf(l, sizeof(l), "  ... %zu more processes (f: filter)", fr->npr - i);
			line_cut(f, l, W), used++;
			break;
		}
		char rank[16], heap[32] = "", st[2048], cpu[16];
		snprintf(cpu, sizeof(cpu), r->cpu_pct >= 0 ? "%.0f" : "-", r->cpu_pct);
		snprintf(rank, sizeof(rank), r->p->rank >= 0 ? "%d" : "-", r->p->rank);
		human(r->ev_s, a, sizeof(a));
		human(r->calls_s, b, sizeof(b));
		human((double)r->calls, c, sizeof(c));
		human((double)r->p->dropped, d, sizeof(d));
		if (v->memory) {
			char hb[24];
			bytes(r->p->heap, hb, sizeof(hb));
			snprintf(heap, sizeof(heap), " %8s", now->ended ? "-" : hb);
		}
		int used_w = 7 + 1 + 5 + 1 + 12 + 1 + 14 + 1 + 4 + 6 + 4 * 9 + 6 + (v->memory ? 9 : 0) + 1;
		stack_text(r->main, st, sizeof(st), W ? W - used_w : 0);
		snprintf(l, sizeof(l), "%7d %5s %-12.12s %-14.14s %4d %5s %8s %8s %8s %8s %5.1f%s %s", r->p->pid, rank,
			 r->p->host, r->p->comm, r->threads, cpu, a, b, c, d, r->mpi_pct, heap, st);
		line_cut(f, l, W), used++;
	}
	fputc('\n', f), used++;
	snprintf(l, sizeof(l), "%7s %7s %-15s %5s %8s %8s %8s %5s %5s %s", "PID", "TID", "THREAD", "CPU%", "EVENTS/s",
		 "CALLS/s", "DROPPED", "MPI%", "DEPTH", "OPEN NOW (innermost last)");
	line_cut(f, l, W), used++;
	size_t shown = 0;
	for (size_t i = 0; i < fr->ntr; i++) {
		const struct trow *r = &fr->tr[i];
		if (!r->t->alive && !now->ended)
			continue;
		if (rows && used >= (rows * 2) / 3 && shown) {
			snprintf(l, sizeof(l), "  ... more threads (f: filter)");
			line_cut(f, l, W), used++;
			break;
		}
		char st[2048], cpu[16];
		snprintf(cpu, sizeof(cpu), r->cpu_pct >= 0 ? "%.0f" : "-", r->cpu_pct);
		human(r->ev_s, a, sizeof(a));
		human(r->calls_s, b, sizeof(b));
		human((double)r->t->dropped, d, sizeof(d));
		stack_text(r->t, st, sizeof(st), W ? W - 76 : 0);
		snprintf(l, sizeof(l), "%7d %7d %-15.15s %5s %8s %8s %8s %5.1f %5u %s%s", r->p->pid, r->t->tid,
			 r->t->name[0] ? r->t->name : "-", cpu, a, b, d, r->mpi_pct, r->t->depth, st,
			 r->t->lag_chunks ? " (writer behind)" : r->t->dropped ? " (events dropped: may be off)" : "");
		line_cut(f, l, W), used++;
		shown++;
	}
	fputc('\n', f), used++;
	snprintf(l, sizeof(l), "%6s %10s %9s %10s %4s  %s", "SELF%", "SELF s", "CALLS/s", "CALLS", "THR",
		 "FUNCTION OR SLICE (self time, since the watch began)");
	line_cut(f, l, W), used++;
	for (size_t i = 0; i < fr->nfr; i++) {
		if (rows && used >= rows - 1)
			break;
		const struct frow *r = &fr->fr[i];
		human(r->calls_s, a, sizeof(a));
		human((double)r->calls, b, sizeof(b));
		snprintf(l, sizeof(l), "%6.1f %10.3f %9s %10s %4d  %s", r->self_pct, (double)r->self_ns / 1e9, a, b, r->threads,
			 r->name);
		line_cut(f, l, W), used++;
	}
	if (!fr->nfr)
		line_cut(f, "  (no calls counted yet)", W);
}

/* ---- CSV and JSON ---- */

static void csv_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static double fin(double x)
{
	return isfinite(x) ? x : 0;
}

static void print_csv(FILE *f, const struct top_view *v, const struct top_sample *now, const struct frame *fr)
{
	if (v->header_csv)
		fprintf(f, "table,ended,interval_s,pid,rank,host,process,tid,thread,cpu_pct,events_per_s,events,calls_per_s,calls,"
			   "dropped,mpi_pct,heap_bytes,depth,self_pct,self_s,name,open_now\n");
	double dt = now->ended ? now->span_s : fr->dt;
	for (size_t i = 0; i < fr->npr; i++) {
		const struct prow *r = &fr->pr[i];
		char st[2048];
		stack_text(r->main, st, sizeof(st), 0);
		fprintf(f, "process,%d,%.3f,%d,%d,", now->ended, dt, r->p->pid, r->p->rank);
		csv_str(f, r->p->host);
		fputc(',', f);
		csv_str(f, r->p->comm);
		fprintf(f, ",,,%.1f,%.1f,%llu,%.1f,%llu,%llu,%.1f,%llu,,,,,", r->cpu_pct, fin(r->ev_s), (unsigned long long)r->p->events,
			fin(r->calls_s), (unsigned long long)r->calls, (unsigned long long)r->p->dropped, fin(r->mpi_pct),
			(unsigned long long)r->p->heap);
		csv_str(f, st);
		fputc('\n', f);
	}
	for (size_t i = 0; i < fr->ntr; i++) {
		const struct trow *r = &fr->tr[i];
		char st[2048];
		stack_text(r->t, st, sizeof(st), 0);
		fprintf(f, "thread,%d,%.3f,%d,%d,", now->ended, dt, r->p->pid, r->p->rank);
		csv_str(f, r->p->host);
		fputc(',', f);
		csv_str(f, r->p->comm);
		fprintf(f, ",%d,", r->t->tid);
		csv_str(f, r->t->name);
		fprintf(f, ",%.1f,%.1f,%llu,%.1f,%llu,%llu,%.1f,,%u,,,,", r->cpu_pct, fin(r->ev_s), (unsigned long long)r->t->events,
			fin(r->calls_s), (unsigned long long)r->t->calls, (unsigned long long)r->t->dropped,
			fin(r->mpi_pct), r->t->depth);
		csv_str(f, st);
		fputc('\n', f);
	}
	for (size_t i = 0; i < fr->nfr; i++) {
		const struct frow *r = &fr->fr[i];
		fprintf(f, "function,%d,%.3f,,,,,,,,,,%.1f,%llu,,,,,%.2f,%.6f,", now->ended, dt, fin(r->calls_s),
			(unsigned long long)r->calls, fin(r->self_pct), (double)r->self_ns / 1e9);
		csv_str(f, r->name);
		fprintf(f, ",\n");
	}
}

static void json_stack(FILE *f, const struct top_thread *t)
{
	fputc('[', f);
	for (size_t i = 0; t && i < t->nstack; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		json_str(f, t->stack[i].name);
		fprintf(f, ",\"open_s\":%.6f}", (double)t->stack[i].open_ns / 1e9);
	}
	fputc(']', f);
}

static void print_json(FILE *f, const struct top_view *v, const struct top_sample *now, const struct frame *fr)
{
	char wl[512];
	waiting_line(fr, fr->have_dt, wl, sizeof(wl));
	fprintf(f, "{\"dir\":");
	json_str(f, v->dir);
	fprintf(f, ",\"ended\":%s,\"interval_s\":%.3f,\"recorders\":%d,\"recorders_elsewhere\":%d,\"other_hosts\":",
		now->ended ? "true" : "false", now->ended ? now->span_s : fr->dt, now->recorders, now->elsewhere);
	json_str(f, now->other_hosts);
	fprintf(f, ",\"waiting\":");
	json_str(f, wl);
	fprintf(f, ",\"processes\":[");
	for (size_t i = 0; i < fr->npr; i++) {
		const struct prow *r = &fr->pr[i];
		fprintf(f, "%s{\"pid\":%d,\"rank\":%d,\"host\":", i ? "," : "", r->p->pid, r->p->rank);
		json_str(f, r->p->host);
		fprintf(f, ",\"process\":");
		json_str(f, r->p->comm);
		fprintf(f, ",\"flight_recorder\":%s,\"cpu_pct\":%.1f,\"events_per_s\":%.1f,\"events\":%llu,\"calls_per_s\":%.1f,\"calls\":%llu,"
			   "\"dropped\":%llu,\"mpi_pct\":%.1f,\"heap_bytes\":%llu,\"threads\":[",
			r->p->flight ? "true" : "false", r->cpu_pct, fin(r->ev_s), (unsigned long long)r->p->events, fin(r->calls_s),
			(unsigned long long)r->calls, (unsigned long long)r->p->dropped, fin(r->mpi_pct),
			(unsigned long long)r->p->heap);
		int first = 1;
		for (size_t k = 0; k < fr->ntr; k++) {
			const struct trow *t = &fr->tr[k];
			if (t->p != r->p)
				continue;
			fprintf(f, "%s{\"tid\":%d,\"name\":", first ? "" : ",", t->t->tid);
			first = 0;
			json_str(f, t->t->name);
			fprintf(f, ",\"alive\":%s,\"cpu_pct\":%.1f,\"events_per_s\":%.1f,\"events\":%llu,\"calls_per_s\":%.1f,\"calls\":%llu,"
				   "\"dropped\":%llu,\"mpi_pct\":%.1f,\"depth\":%u,\"open_now\":",
				t->t->alive ? "true" : "false", t->cpu_pct, fin(t->ev_s), (unsigned long long)t->t->events, fin(t->calls_s),
				(unsigned long long)t->t->calls, (unsigned long long)t->t->dropped, fin(t->mpi_pct),
				t->t->depth);
			json_stack(f, t->t);
			fputc('}', f);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "],\"functions\":[");
	for (size_t i = 0; i < fr->nfr; i++) {
		const struct frow *r = &fr->fr[i];
		fprintf(f, "%s{\"name\":", i ? "," : "");
		json_str(f, r->name);
		fprintf(f, ",\"self_pct\":%.2f,\"self_s\":%.6f,\"calls_per_s\":%.1f,\"calls\":%llu,\"threads\":%d}",
			fin(r->self_pct), (double)r->self_ns / 1e9, fin(r->calls_s), (unsigned long long)r->calls, r->threads);
	}
	fprintf(f, "]}\n");
}

void top_frame_print(FILE *f, const struct top_view *v, const struct top_sample *before, const struct top_sample *now)
{
	struct frame fr;
	if (frame_make(v, before, now, &fr)) {
		frame_free(&fr);
		fprintf(f, "weft: top: out of memory\n");
		return;
	}
	if (v->format == TOP_CSV)
		print_csv(f, v, now, &fr);
	else if (v->format == TOP_JSON)
		print_json(f, v, now, &fr);
	else
		print_text(f, v, now, &fr);
	frame_free(&fr);
}
