/*
 * profile.c - see profile.h. Each thread is walked with a stack of open frames; a frame's
 * duration goes to its name's total (unless the name is already open further out: recursion)
 * and self time, and its parent's child time. Names are merged across threads with a sort.
 */
#include "export/profile.h"
#include "export/model.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct frame {
	uint32_t id;
	uint64_t start, child;
	struct weft_tnode *node;
};

struct tstat {
	uint64_t calls, total, self, max;
};

struct pthread_job {
	const struct weft_proc *p;
	const struct weft_thread_data *th;
	uint64_t end_ns;
	int tree;
	struct tstat *st;      /* by site id */
	uint32_t *open;        /* open frames per site id */
	size_t nsites;
	struct frame *stack;
	size_t depth, cap;
	struct weft_tnode root;
	struct weft_walk_stats ws;
};

static struct weft_tnode *child_of(struct weft_tnode *parent, const char *name)
{
	for (struct weft_tnode *c = parent->child; c; c = c->next)
		if (c->name == name || !strcmp(c->name, name))
			return c;
	struct weft_tnode *c = calloc(1, sizeof(*c));
	if (!c)
		weft_oom("building the profile");
	c->name = name;
	c->next = parent->child;
	parent->child = c;
	return c;
}

static const char *name_of(const struct weft_proc *p, uint32_t id)
{
	const char *n = weft_site_name(p, id);
	return n ? n : "(unknown)";
}

static void on_event(void *ud, const struct weft_ev *ev)
{
	struct pthread_job *j = ud;
	if (ev->kind != WEFT_EV_BEGIN && ev->kind != WEFT_EV_END && ev->kind != WEFT_EV_COMPLETE)
		return;
	if (ev->id >= j->nsites)
		return;
	if (ev->kind == WEFT_EV_BEGIN) {
		if (j->depth == j->cap) {
			j->cap = j->cap ? j->cap * 2 : 256;
			j->stack = realloc(j->stack, j->cap * sizeof(*j->stack));
			if (!j->stack)
				weft_oom("building the profile");
		}
		struct frame *f = &j->stack[j->depth];
		f->id = ev->id;
		f->start = ev->ts;
		f->child = 0;
		f->node = j->tree ? child_of(j->depth ? j->stack[j->depth - 1].node : &j->root,
					     name_of(j->p, ev->id))
				  : NULL;
		j->open[ev->id]++;
		j->depth++;
		return;
	}
	uint64_t dur, start;
	uint32_t id = ev->id;
	struct weft_tnode *node = NULL;
	if (ev->kind == WEFT_EV_COMPLETE) {
		start = ev->ts;
		dur = ev->end_ts - ev->ts;
		if (j->tree)
			node = child_of(j->depth ? j->stack[j->depth - 1].node : &j->root, name_of(j->p, id));
		j->open[id]++;
	} else {
		if (!j->depth)
			return; /* the walker balances; nothing to close */
		struct frame *f = &j->stack[--j->depth];
		id = f->id;
		start = f->start;
		dur = ev->ts > start ? ev->ts - start : 0;
		node = f->node;
		uint64_t self = dur > f->child ? dur - f->child : 0;
		j->st[id].self += self;
		if (node)
			node->self += self;
	}
	(void)start;
	if (ev->kind == WEFT_EV_COMPLETE)
		j->st[id].self += dur;
	j->st[id].calls++;
	if (--j->open[id] == 0)
		j->st[id].total += dur; /* the outermost of a recursion only */
	if (dur > j->st[id].max)
		j->st[id].max = dur;
	if (node) {
		node->calls++;
		node->total += dur;
	}
	if (j->depth)
		j->stack[j->depth - 1].child += dur;
}

static void walk(size_t i, void *ud)
{
	struct pthread_job *j = &((struct pthread_job *)ud)[i];
	j->nsites = j->p->nsites + 1;
	j->st = calloc(j->nsites, sizeof(*j->st));
	j->open = calloc(j->nsites, sizeof(*j->open));
	if (!j->st || !j->open)
		weft_oom("building the profile");
	uint64_t *buf = NULL;
	size_t cap = 0;
	weft_walk_thread(j->p, j->th, j->end_ns, on_event, j, &j->ws, &buf, &cap);
	free(buf);
	free(j->stack);
	free(j->open);
}

static int cmp_row(const void *a, const void *b)
{
	const struct weft_fstat *x = a, *y = b;
	if (x->tid != y->tid || x->pid != y->pid)
		return x->pid != y->pid ? (x->pid < y->pid ? -1 : 1) : (x->tid < y->tid ? -1 : 1);
	return strcmp(x->name, y->name);
}

/* Merge the children of src into dst, by name. */
static void merge_tree(struct weft_tnode *dst, struct weft_tnode *src)
{
	for (struct weft_tnode *c = src->child, *next; c; c = next) {
		next = c->next;
		struct weft_tnode *d = child_of(dst, c->name);
		d->calls += c->calls;
		d->total += c->total;
		d->self += c->self;
		merge_tree(d, c);
		free(c);
	}
	src->child = NULL;
}

int weft_profile_build(const struct weft_trace *t, int per_thread, int tree, int jobs,
		       struct weft_profile *out)
{
	memset(out, 0, sizeof(*out));
	size_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		n += t->procs[i].nthreads;
	struct pthread_job *js = calloc(n + 1, sizeof(*js));
	if (!js)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t h = 0; h < t->procs[i].nthreads; h++, k++) {
			js[k].p = &t->procs[i];
			js[k].th = &t->procs[i].threads[h];
			js[k].end_ns = t->last_ns;
			js[k].tree = tree;
		}
	weft_parallel_for(n, jobs, walk, js);
	size_t rows = 0, cap = 0;
	uint64_t oom = 0;
	struct weft_fstat *r = NULL;
	out->root = calloc(1, sizeof(*out->root));
	if (!out->root)
		weft_oom("building the profile");
	out->root->name = "";
	for (size_t i = 0; i < n; i++) {
		struct pthread_job *j = &js[i];
		out->events += j->ws.events;
		out->bad_chunks += j->ws.bad_chunks;
		if (!out->bad_why)
			out->bad_why = j->ws.bad_why;
		oom += j->ws.oom;
		for (size_t id = 0; id < j->nsites; id++) {
			if (!j->st[id].calls)
				continue;
			if (rows == cap) {
				cap = cap ? cap * 2 : 256;
				r = realloc(r, cap * sizeof(*r));
				if (!r)
					weft_oom("building the profile");
			}
			r[rows++] = (struct weft_fstat){name_of(j->p, (uint32_t)id),
							 per_thread ? j->p->pid : 0,
							 per_thread == WEFT_PROFILE_THREADS ? j->th->tid : 0,
							 j->st[id].calls, j->st[id].total, j->st[id].self, j->st[id].max};
		}
		free(j->st);
		merge_tree(out->root, &j->root);
	}
	free(js);
	if (rows)
		qsort(r, rows, sizeof(*r), cmp_row);
	size_t o = 0;
	for (size_t i = 0; i < rows; i++) {
		if (o && !cmp_row(&r[o - 1], &r[i])) {
			r[o - 1].calls += r[i].calls;
			r[o - 1].total += r[i].total;
			r[o - 1].self += r[i].self;
			if (r[i].max > r[o - 1].max)
				r[o - 1].max = r[i].max;
		} else {
			r[o++] = r[i];
		}
	}
	out->rows = r;
	out->nrows = o;
	if (oom) {
		weft_profile_free(out);
		return -ENOMEM;
	}
	return 0;
}

static void free_tree(struct weft_tnode *n)
{
	for (struct weft_tnode *c = n->child, *next; c; c = next) {
		next = c->next;
		free_tree(c);
	}
	free(n);
}

void weft_profile_free(struct weft_profile *p)
{
	free(p->rows);
	if (p->root)
		free_tree(p->root);
	memset(p, 0, sizeof(*p));
}
