/*
 * json.c - trace -> Chrome JSON ({"traceEvents":[...]}), as read by chrome://tracing, Perfetto
 * and speedscope. The output is always complete JSON, sorted by timestamp, with "M" events
 * naming processes and threads. --json-style=be writes B/E pairs, x writes complete "X"
 * events. Slices still open at the end of the trace are closed there with
 * args.weft_unterminated = true. Named-track lanes become pseudo-threads (tid 0x40000000 +
 * track<<12 + thread index) named "track / thread". Each thread is formatted in parallel into
 * its own text buffer with an index of (ts, offset) entries; the entries are then merged
 * across threads by timestamp.
 */
#include "export/export.h"
#include "export/pb.h"
#include "format/format.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define JF_X 1u        /* text is an open X event; dur and closing come at output */
#define JF_ARGS 2u     /* the X event's args object is non-empty */
#define JF_UNTERM 4u

struct jent {
	uint64_t ts;
	uint64_t off;
	uint32_t len, flags;
	uint64_t dur;
};

struct jstack {
	unsigned track;
	size_t *idx;
	size_t n, cap;
};

struct jthread {
	const struct weft_proc *p;
	const struct weft_thread_data *th;
	size_t thread_index;
	int style;
	uint64_t end_ns; /* closes slices left open */
	struct pb text;
	struct jent *ents;
	size_t nents, cap;
	int unsorted;
	struct jstack *stacks;
	size_t nstacks;
	unsigned *lanes; /* named tracks used by this thread */
	size_t nlanes;
	struct weft_walk_stats st;
};

static void put(struct pb *b, const char *s, size_t n)
{
	pb_reserve(b, n);
	memcpy(b->p + b->n, s, n);
	b->n += n;
}
#define PUTS(b, lit) put(b, lit, sizeof(lit) - 1)

static void put_u64(struct pb *b, uint64_t v)
{
	char tmp[24];
	int i = 24;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(b, tmp + i, (size_t)(24 - i));
}

static void put_i64(struct pb *b, int64_t v)
{
	if (v < 0) {
		PUTS(b, "-");
		put_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		put_u64(b, (uint64_t)v);
	}
}

/* ns -> microseconds with three decimals */
static void put_us(struct pb *b, uint64_t ns)
{
	put_u64(b, ns / 1000);
	char f[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10), (char)('0' + ns % 10)};
	put(b, f, 4);
}

static void put_double(struct pb *b, double d)
{
	char tmp[40];
	if (d != d || d - d != 0) { /* NaN or infinity: JSON has no such number */
		PUTS(b, "null");
		return;
	}
	int n = snprintf(tmp, sizeof(tmp), "%.17g", d);
	put(b, tmp, (size_t)n);
}

static void put_str(struct pb *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	pb_reserve(b, n * 6 + 2);
	uint8_t *o = b->p + b->n;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = c;
		} else if (c < 0x20 || c == 0x7f) {
			*o++ = '\\';
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = (uint8_t)hex[c >> 4];
			*o++ = (uint8_t)hex[c & 15];
		} else if (c >= 0x80) {
			/* pass valid UTF-8 through; replace invalid bytes with U+FFFD */
			size_t len = (c >= 0xf0 && c < 0xf5) ? 4 : (c >= 0xe0) ? 3 : (c >= 0xc2 && c < 0xe0) ? 2 : 0;
			int ok = len && i + len <= n;
			for (size_t k = 1; ok && k < len; k++)
				ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
			if (ok) {
				memcpy(o, s + i, len);
				o += len;
				i += len - 1;
			} else {
				memcpy(o, "\xef\xbf\xbd", 3);
				o += 3;
			}
		} else {
			*o++ = c;
		}
	}
	*o++ = '"';
	b->n = (size_t)(o - b->p);
}

static void put_cstr(struct pb *b, const char *s)
{
	put_str(b, s, strlen(s));
}

static struct jent *add(struct jthread *j, uint64_t ts, uint64_t off, unsigned flags)
{
	if (j->nents == j->cap) {
		j->cap = j->cap ? j->cap * 2 : 1024;
		j->ents = realloc(j->ents, j->cap * sizeof(*j->ents));
		if (!j->ents)
			abort();
	}
	if (j->nents && ts < j->ents[j->nents - 1].ts)
		j->unsorted = 1;
	struct jent *e = &j->ents[j->nents++];
	e->ts = ts;
	e->off = off;
	e->len = 0;
	e->flags = flags;
	e->dur = 0;
	return e;
}

static struct jstack *stack_for(struct jthread *j, unsigned track)
{
	for (size_t i = 0; i < j->nstacks; i++)
		if (j->stacks[i].track == track)
			return &j->stacks[i];
	j->stacks = realloc(j->stacks, (j->nstacks + 1) * sizeof(*j->stacks));
	if (!j->stacks)
		abort();
	struct jstack *s = &j->stacks[j->nstacks++];
	memset(s, 0, sizeof(*s));
	s->track = track;
	return s;
}

static uint64_t lane_tid(const struct jthread *j, unsigned track)
{
	return track ? 0x40000000u + ((uint64_t)track << 12) + (j->thread_index & 0xfff) : j->th->tid;
}

static void note_lane(struct jthread *j, unsigned track)
{
	for (size_t i = 0; i < j->nlanes; i++)
		if (j->lanes[i] == track)
			return;
	j->lanes = realloc(j->lanes, (j->nlanes + 1) * sizeof(unsigned));
	if (!j->lanes)
		abort();
	j->lanes[j->nlanes++] = track;
}

static void head(struct jthread *j, const char *ph, uint64_t ts, unsigned track, int with_tid)
{
	struct pb *b = &j->text;
	PUTS(b, "{\"ph\":\"");
	put(b, ph, strlen(ph));
	PUTS(b, "\",\"pid\":");
	put_u64(b, (uint64_t)(uint32_t)j->p->pid);
	if (with_tid) {
		PUTS(b, ",\"tid\":");
		put_u64(b, lane_tid(j, track));
	}
	PUTS(b, ",\"ts\":");
	put_us(b, ts);
}

static void name_cat(struct jthread *j, const struct weft_ev *ev)
{
	struct pb *b = &j->text;
	const struct weft_proc *p = j->p;
	PUTS(b, ",\"name\":");
	if (ev->kind == WEFT_EV_DROPPED)
		PUTS(b, "\"weft: events dropped\"");
	else if (ev->id < p->nsites && p->sites[ev->id].defined)
		put_cstr(b, p->sites[ev->id].name);
	else {
		char buf[32];
		snprintf(buf, sizeof(buf), ev->id ? "site#%u" : "(flow)", ev->id);
		put_cstr(b, buf);
	}
	if (ev->id < p->nsites && p->sites[ev->id].defined && p->sites[ev->id].cat[0]) {
		PUTS(b, ",\"cat\":");
		put_cstr(b, p->sites[ev->id].cat);
	}
}

/* Writes "key":value pairs; returns how many. */
static unsigned arg_pairs(struct jthread *j, const struct weft_ev *ev, unsigned already)
{
	struct pb *b = &j->text;
	const struct weft_proc *p = j->p;
	unsigned n = already;
	for (unsigned i = 0; i < ev->nargs; i++) {
		const struct weft_ev_arg *a = &ev->args[i];
		if (n++)
			PUTS(b, ",");
		put_cstr(b, a->key < p->nsites && p->sites[a->key].defined ? p->sites[a->key].name : "?");
		PUTS(b, ":");
		switch (a->type) {
		case WEFT_R_ARG_I64: put_i64(b, (int64_t)a->v); break;
		case WEFT_R_ARG_U64: put_u64(b, a->v); break;
		case WEFT_R_ARG_BOOL: if (a->v) PUTS(b, "true"); else PUTS(b, "false"); break;
		case WEFT_R_ARG_F64: { double d; memcpy(&d, &a->v, 8); put_double(b, d); break; }
		case WEFT_R_ARG_PTR: {
			char tmp[24];
			int k = snprintf(tmp, sizeof(tmp), "\"0x%llx\"", (unsigned long long)a->v);
			put(b, tmp, (size_t)k);
			break;
		}
		case WEFT_R_ARG_STR: put_str(b, a->s, strnlen(a->s, a->slen)); break;
		default: PUTS(b, "null"); break;
		}
	}
	if (ev->kind == WEFT_EV_DROPPED) {
		if (n++)
			PUTS(b, ",");
		PUTS(b, "\"dropped_events\":");
		put_u64(b, ev->value);
	}
	return n;
}

static void close_entry(struct jthread *j, struct jent *e)
{
	e->len = (uint32_t)(j->text.n - e->off);
}

static void flows(struct jthread *j, const struct weft_ev *ev)
{
	struct pb *b = &j->text;
	for (unsigned k = 0; k < ev->nout + ev->nin; k++) {
		int out = k < ev->nout;
		uint64_t id = out ? ev->flows_out[k] : ev->flows_in[k - ev->nout];
		struct jent *e = add(j, ev->ts, b->n, 0);
		head(j, out ? "s" : "f", ev->ts, ev->track, 1);
		PUTS(b, ",\"name\":\"flow\",\"cat\":\"flow\",\"id\":");
		put_u64(b, id);
		if (!out)
			PUTS(b, ",\"bp\":\"e\"");
		PUTS(b, "}");
		close_entry(j, e);
	}
}

static void simple(struct jthread *j, const struct weft_ev *ev, const char *ph, uint64_t ts, int args)
{
	struct pb *b = &j->text;
	struct jent *e = add(j, ts, b->n, 0);
	head(j, ph, ts, ev->track, 1);
	name_cat(j, ev);
	if (!strcmp(ph, "i"))
		PUTS(b, ",\"s\":\"t\"");
	if (args && (ev->nargs || ev->kind == WEFT_EV_DROPPED)) {
		PUTS(b, ",\"args\":{");
		arg_pairs(j, ev, 0);
		PUTS(b, "}");
	}
	PUTS(b, "}");
	close_entry(j, e);
}

static void on_event(void *ud, const struct weft_ev *ev)
{
	struct jthread *j = ud;
	struct pb *b = &j->text;
	if (ev->track)
		note_lane(j, ev->track);
	switch (ev->kind) {
	case WEFT_EV_BEGIN:
		if (j->style == WEFT_JSON_X) {
			struct jent *e = add(j, ev->ts, b->n, JF_X);
			head(j, "X", ev->ts, ev->track, 1);
			name_cat(j, ev);
			PUTS(b, ",\"args\":{");
			if (arg_pairs(j, ev, 0))
				e->flags |= JF_ARGS;
			close_entry(j, e);
			struct jstack *s = stack_for(j, ev->track);
			if (s->n == s->cap) {
				s->cap = s->cap ? s->cap * 2 : 64;
				s->idx = realloc(s->idx, s->cap * sizeof(size_t));
				if (!s->idx)
					abort();
			}
			s->idx[s->n++] = j->nents - 1;
		} else {
			simple(j, ev, "B", ev->ts, 1);
		}
		flows(j, ev);
		break;
	case WEFT_EV_END:
		if (j->style == WEFT_JSON_X) {
			struct jstack *s = stack_for(j, ev->track);
			if (!s->n)
				break; /* cannot happen: the walker balances */
			struct jent *e = &j->ents[s->idx[--s->n]];
			e->dur = ev->ts - e->ts;
			if (ev->flags & WEFT_EVF_UNTERMINATED)
				e->flags |= JF_UNTERM;
		} else {
			struct jent *e = add(j, ev->ts, b->n, 0);
			head(j, "E", ev->ts, ev->track, 1);
			if (ev->flags & WEFT_EVF_UNTERMINATED)
				PUTS(b, ",\"args\":{\"weft_unterminated\":true}");
			else if (ev->flags & WEFT_EVF_UNWOUND)
				PUTS(b, ",\"args\":{\"weft_unwound\":true}");
			PUTS(b, "}");
			close_entry(j, e);
		}
		break;
	case WEFT_EV_COMPLETE:
		if (j->style == WEFT_JSON_X) {
			struct jent *e = add(j, ev->ts, b->n, JF_X);
			head(j, "X", ev->ts, ev->track, 1);
			name_cat(j, ev);
			PUTS(b, ",\"args\":{");
			if (arg_pairs(j, ev, 0))
				e->flags |= JF_ARGS;
			close_entry(j, e);
			e->dur = ev->end_ts - ev->ts;
		} else {
			simple(j, ev, "B", ev->ts, 1);
			struct jent *e = add(j, ev->end_ts, b->n, 0);
			head(j, "E", ev->end_ts, ev->track, 1);
			PUTS(b, "}");
			close_entry(j, e);
		}
		flows(j, ev);
		break;
	case WEFT_EV_INSTANT:
	case WEFT_EV_DROPPED:
		simple(j, ev, "i", ev->ts, 1);
		flows(j, ev);
		break;
	case WEFT_EV_COUNTER: {
		struct jent *e = add(j, ev->ts, b->n, 0);
		head(j, "C", ev->ts, 0, 0);
		name_cat(j, ev);
		PUTS(b, ",\"args\":{\"value\":");
		if (ev->is_double) {
			double d;
			memcpy(&d, &ev->value, 8);
			put_double(b, d);
		} else {
			put_i64(b, (int64_t)ev->value);
		}
		PUTS(b, "}}");
		close_entry(j, e);
		break;
	}
	case WEFT_EV_ASYNC_BEGIN:
	case WEFT_EV_ASYNC_END:
	case WEFT_EV_ASYNC_INSTANT: {
		const char *ph = ev->kind == WEFT_EV_ASYNC_BEGIN ? "b" : ev->kind == WEFT_EV_ASYNC_END ? "e" : "n";
		struct jent *e = add(j, ev->ts, b->n, 0);
		head(j, ph, ev->ts, 0, 1);
		name_cat(j, ev);
		if (!(ev->id < j->p->nsites && j->p->sites[ev->id].defined && j->p->sites[ev->id].cat[0]))
			PUTS(b, ",\"cat\":\"async\"");
		char tmp[40];
		int k = snprintf(tmp, sizeof(tmp), ",\"id\":\"0x%llx\"", (unsigned long long)ev->value);
		put(b, tmp, (size_t)k);
		if (ev->nargs) {
			PUTS(b, ",\"args\":{");
			arg_pairs(j, ev, 0);
			PUTS(b, "}");
		}
		PUTS(b, "}");
		close_entry(j, e);
		break;
	}
	default:
		break;
	}
}

static int cmp_ent(const void *a, const void *b)
{
	const struct jent *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static void format_thread(size_t i, void *ud)
{
	struct jthread *j = &((struct jthread *)ud)[i];
	weft_walk_thread(j->p, j->th, j->end_ns, on_event, j, &j->st);
}

struct ctx {
	FILE *out;
	struct pb buf;
	int err;
};

static void out_flush(struct ctx *c, int force)
{
	if (c->buf.n >= (1u << 20) || (force && c->buf.n)) {
		if (!c->err && fwrite(c->buf.p, 1, c->buf.n, c->out) != c->buf.n)
			c->err = errno ? errno : EIO;
		c->buf.n = 0;
	}
}

static void emit_ent(struct ctx *c, const struct jthread *j, const struct jent *e, int *first)
{
	struct pb *b = &c->buf;
	if (!*first)
		PUTS(b, ",\n");
	*first = 0;
	put(b, (const char *)j->text.p + e->off, e->len);
	if (e->flags & JF_X) {
		if (e->flags & JF_UNTERM)
			put(b, (e->flags & JF_ARGS) ? ",\"weft_unterminated\":true" : "\"weft_unterminated\":true",
			    (e->flags & JF_ARGS) ? 25 : 24);
		PUTS(b, "},\"dur\":");
		put_us(b, e->dur);
		PUTS(b, "}");
	}
	out_flush(c, 0);
}

static void meta_event(struct ctx *c, int pid, uint64_t tid, const char *what, const char *name, int *first)
{
	struct pb *b = &c->buf;
	if (!*first)
		PUTS(b, ",\n");
	*first = 0;
	PUTS(b, "{\"ph\":\"M\",\"pid\":");
	put_u64(b, (uint64_t)(uint32_t)pid);
	if (tid != UINT64_MAX) {
		PUTS(b, ",\"tid\":");
		put_u64(b, tid);
	}
	PUTS(b, ",\"ts\":0,\"name\":");
	put_cstr(b, what);
	PUTS(b, ",\"args\":{\"name\":");
	put_cstr(b, name);
	PUTS(b, "}}");
}

int weft_export_json(const struct weft_trace *t, FILE *out, int style, int jobs,
		     struct weft_export_summary *sum, char *err, size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	size_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		n += t->procs[i].nthreads;
	struct jthread *js = calloc(n + 1, sizeof(*js));
	if (!js)
		abort();
	size_t k = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t h = 0; h < t->procs[i].nthreads; h++, k++) {
			js[k].p = &t->procs[i];
			js[k].th = &t->procs[i].threads[h];
			js[k].thread_index = h;
			js[k].style = style;
			js[k].end_ns = t->last_ns;
		}
	weft_parallel_for(n, jobs, format_thread, js);

	struct ctx c = {.out = out};
	PUTS(&c.buf, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	int first = 1;
	k = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		meta_event(&c, p->pid, UINT64_MAX, "process_name", p->name, &first);
		for (size_t h = 0; h < p->nthreads; h++, k++) {
			struct jthread *j = &js[k];
			meta_event(&c, p->pid, j->th->tid, "thread_name", j->th->name, &first);
			for (size_t l = 0; l < j->nlanes; l++) {
				char name[600];
				const char *tn = weft_track_name(p, j->lanes[l]);
				snprintf(name, sizeof(name), "%s / %s (%u)", tn ? tn : "track", j->th->name, j->th->tid);
				meta_event(&c, p->pid, lane_tid(j, j->lanes[l]), "thread_name", name, &first);
			}
		}
	}
	/* k-way merge of the per-thread entry lists by timestamp */
	size_t *pos = calloc(n + 1, sizeof(size_t)), *heap = calloc(n + 1, sizeof(size_t)), hn = 0;
	if (!pos || !heap)
		abort();
#define KEY(x) (js[x].ents[pos[x]].ts)
	for (size_t i = 0; i < n; i++) {
		if (js[i].unsorted)
			qsort(js[i].ents, js[i].nents, sizeof(struct jent), cmp_ent);
		if (!js[i].nents)
			continue;
		size_t at = hn++;
		heap[at] = i;
		while (at && KEY(heap[(at - 1) / 2]) > KEY(heap[at])) {
			size_t p = (at - 1) / 2, tmp = heap[p];
			heap[p] = heap[at];
			heap[at] = tmp;
			at = p;
		}
	}
	while (hn) {
		size_t top = heap[0];
		emit_ent(&c, &js[top], &js[top].ents[pos[top]], &first);
		if (++pos[top] == js[top].nents)
			heap[0] = heap[--hn];
		size_t at = 0;
		for (;;) {
			size_t l = 2 * at + 1, r = l + 1, m = at;
			if (l < hn && KEY(heap[l]) < KEY(heap[m]))
				m = l;
			if (r < hn && KEY(heap[r]) < KEY(heap[m]))
				m = r;
			if (m == at)
				break;
			size_t tmp = heap[m];
			heap[m] = heap[at];
			heap[at] = tmp;
			at = m;
		}
	}
#undef KEY
	uint64_t dropped = 0, events = 0;
	for (size_t i = 0; i < n; i++) {
		dropped += js[i].th->dropped;
		events += js[i].st.events;
		sum->unmatched_end += js[i].st.unmatched_end;
		sum->unterminated += js[i].st.unterminated;
		sum->unwound += js[i].st.unwound;
		free(js[i].text.p);
		free(js[i].ents);
		for (size_t s = 0; s < js[i].nstacks; s++)
			free(js[i].stacks[s].idx);
		free(js[i].stacks);
		free(js[i].lanes);
	}
	PUTS(&c.buf, "\n],\"metadata\":{\"weft-dropped-events\":");
	put_u64(&c.buf, dropped);
	PUTS(&c.buf, ",\"weft-unterminated-slices\":");
	put_u64(&c.buf, sum->unterminated);
	PUTS(&c.buf, "}}\n");
	out_flush(&c, 1);
	free(c.buf.p);
	free(pos);
	free(heap);
	free(js);
	sum->events = events;
	sum->dropped = dropped;
	if (!c.err && fflush(out))
		c.err = errno;
	if (c.err) {
		snprintf(err, errlen, "writing the trace failed: %s", strerror(c.err));
		return -c.err;
	}
	return 0;
}
