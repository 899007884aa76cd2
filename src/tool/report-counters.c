/*
 * report-counters.c - `weft report --counters`: for a trace recorded with --counters, per
 * function or slice name the calls and, per counter, the total of its deltas (the value at the
 * slice's end minus the value at its begin, computed here from the records, not by
 * trace_processor) and the delta per call; IPC where both instructions and cycles were
 * recorded. A recursive function counts once per outermost call in the totals, as the time
 * report does (the inner calls' deltas lie inside the outer one's). Slices without values at
 * both ends (unwound by a longjmp, unterminated, a thread without counters) are left out.
 */
#include "tool/cmd.h"
#include "tool/report-counters.h"
#include "tool/textout.h"
#include "export/model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXC 8

struct crow {
	const char *name;
	uint64_t calls;
	uint64_t total[MAXC];
	int active; /* open instances on the thread being walked (recursion) */
};

struct copen {
	uint64_t serial;
	struct crow *row;
	uint64_t v[MAXC];
	int has;
};

struct cctx {
	const struct weft_proc *p;
	int map[MAXC]; /* this process's counter k -> column */
	struct crow *rows;
	size_t nrows, cap;
	struct copen *open;
	size_t nopen, ocap;
	int oom;
};

static char cols[MAXC][32];
static unsigned ncols;

static struct crow *row_for(struct cctx *c, const char *name)
{
	for (size_t i = 0; i < c->nrows; i++) /* few distinct names in a report: linear is fine */
		if (!strcmp(c->rows[i].name, name))
			return &c->rows[i];
	if (c->nrows == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct crow *r = realloc(c->rows, cap * sizeof(*r));
		if (!r) {
			c->oom = 1;
			return NULL;
		}
		c->rows = r;
		c->cap = cap;
	}
	struct crow *r = &c->rows[c->nrows++];
	memset(r, 0, sizeof(*r));
	r->name = name;
	return r;
}

static void on_ev(void *ud, const struct weft_ev *e)
{
	struct cctx *c = ud;
	const struct weft_proc *p = c->p;
	if (e->kind == WEFT_EV_BEGIN) {
		const char *name = e->id < p->nsites && p->sites[e->id].name ? p->sites[e->id].name : "?";
		struct crow *r = row_for(c, name);
		if (!r)
			return;
		if (c->nopen == c->ocap) {
			size_t cap = c->ocap ? c->ocap * 2 : 64;
			struct copen *o = realloc(c->open, cap * sizeof(*o));
			if (!o) {
				c->oom = 1;
				return;
			}
			c->open = o;
			c->ocap = cap;
		}
		struct copen *o = &c->open[c->nopen++];
		o->serial = e->serial;
		o->row = r;
		o->has = e->nctr == p->nctr && p->nctr;
		if (o->has)
			memcpy(o->v, e->ctr, 8 * (size_t)p->nctr);
		r->active++;
	} else if (e->kind == WEFT_EV_END) {
		size_t i = c->nopen; /* slices of other tracks interleave: find by serial */
		while (i > 0 && c->open[i - 1].serial != e->serial)
			i--;
		if (!i)
			return;
		struct copen o = c->open[i - 1];
		memmove(&c->open[i - 1], &c->open[i], (c->nopen - i) * sizeof(*c->open));
		c->nopen--;
		o.row->active--;
		if (!o.has || e->nctr != p->nctr)
			return;
		o.row->calls++;
		if (o.row->active) /* an inner call of a recursion: inside the outer one's delta */
			return;
		for (unsigned k = 0; k < p->nctr; k++)
			if (c->map[k] >= 0)
				o.row->total[c->map[k]] += e->ctr[k] - o.v[k];
	}
}

static int col_of(const char *n)
{
	for (unsigned i = 0; i < ncols; i++)
		if (!strcmp(cols[i], n))
			return (int)i;
	return -1;
}

static int by_first(const void *a, const void *b)
{
	const struct crow *x = a, *y = b;
	if (x->total[0] != y->total[0])
		return x->total[0] > y->total[0] ? -1 : 1;
	return strcmp(x->name, y->name);
}

int weft_report_counters(const struct weft_trace *t, int fmt, long limit)
{
	ncols = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		for (unsigned k = 0; k < t->procs[i].nctr; k++)
			if (col_of(t->procs[i].ctr_names[k]) < 0 && ncols < MAXC)
				snprintf(cols[ncols++], sizeof(cols[0]), "%s", t->procs[i].ctr_names[k]);
	if (!ncols) {
		weft_cli_error("report", "--counters: this trace has no counters (record with weft record --counters=LIST)");
		return WEFT_EXIT_FAIL;
	}
	struct cctx c;
	memset(&c, 0, sizeof(c));
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		if (!p->nctr)
			continue;
		c.p = p;
		for (unsigned k = 0; k < p->nctr; k++)
			c.map[k] = col_of(p->ctr_names[k]);
		for (size_t j = 0; j < p->nthreads; j++) {
			struct weft_walk_stats st;
			memset(&st, 0, sizeof(st));
			c.nopen = 0;
			for (size_t r = 0; r < c.nrows; r++)
				c.rows[r].active = 0;
			weft_walk_thread(p, &p->threads[j], t->last_ns, on_ev, &c, &st, &buf, &cap);
		}
	}
	free(buf);
	free(c.open);
	if (c.oom) {
		free(c.rows);
		weft_cli_error("report", "out of memory: no report (it would be incomplete)");
		return WEFT_EXIT_FAIL;
	}
	size_t n = 0; /* rows with counted calls only */
	for (size_t i = 0; i < c.nrows; i++)
		if (c.rows[i].calls)
			c.rows[n++] = c.rows[i];
	qsort(c.rows, n, sizeof(*c.rows), by_first);
	if (limit > 0 && (size_t)limit < n)
		n = (size_t)limit;
	int ins = col_of("instructions"), cyc = col_of("cycles");
	if (cyc < 0)
		cyc = col_of("cpu-cycles");
	int ipc = ins >= 0 && cyc >= 0;
	if (fmt == 1) { /* csv */
		printf("name,calls");
		for (unsigned k = 0; k < ncols; k++)
			printf(",%s,%s/call", cols[k], cols[k]);
		printf("%s\n", ipc ? ",ipc" : "");
	} else if (fmt == 2) {
		printf("[");
	} else {
		printf("%12s", "calls");
		for (unsigned k = 0; k < ncols; k++) {
			char pc[sizeof(cols[0]) + 8];
			snprintf(pc, sizeof(pc), "%.*s/call", (int)sizeof(cols[0]) - 1, cols[k]);
			printf("  %16s  %19s", cols[k], pc);
		}
		printf("%s  name\n", ipc ? "    IPC" : "");
	}
	for (size_t i = 0; i < n; i++) {
		const struct crow *r = &c.rows[i];
		double x = ipc && r->total[cyc] ? (double)r->total[ins] / (double)r->total[cyc] : 0;
		if (fmt == 1) {
			weft_csv_str(r->name);
			printf(",%llu", (unsigned long long)r->calls);
			for (unsigned k = 0; k < ncols; k++)
				printf(",%llu,%.1f", (unsigned long long)r->total[k], (double)r->total[k] / (double)r->calls);
			if (ipc)
				printf(",%.3f", x);
			printf("\n");
		} else if (fmt == 2) {
			printf("%s\n  {\"name\": ", i ? "," : "");
			weft_json_str(r->name);
			printf(", \"calls\": %llu", (unsigned long long)r->calls);
			for (unsigned k = 0; k < ncols; k++)
				printf(", \"%s\": %llu, \"%s/call\": %.1f", cols[k], (unsigned long long)r->total[k], cols[k],
				       (double)r->total[k] / (double)r->calls);
			if (ipc)
				printf(", \"ipc\": %.3f", x);
			printf("}");
		} else {
			printf("%12llu", (unsigned long long)r->calls);
			for (unsigned k = 0; k < ncols; k++)
				printf("  %16llu  %19.1f", (unsigned long long)r->total[k], (double)r->total[k] / (double)r->calls);
			if (ipc)
				printf("  %5.2f", x);
			printf("  %s\n", r->name);
		}
	}
	if (fmt == 2)
		printf("\n]\n");
	free(c.rows);
	return WEFT_EXIT_OK;
}
