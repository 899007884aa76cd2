/*
 * otf2.c - trace -> OTF2 archive (Debian's libotf2: Vampir, Scalasca's scout, otf2-print), the
 * mapping of docs/otf2.md. Built only where libotf2 was found (WEFT_HAVE_OTF2).
 *
 * Layout. A system tree node per host under one root; a location group per process (its name,
 * and in a job its rank: "app rank 2"); a location per thread, and one more per named track a
 * thread recorded slices on (the lanes the .pftrace draws under the track), so that every
 * location's Enter and Leave nest exactly. A region per distinct (name, category) as the
 * .pftrace names slices (symbolized functions, annotations, Python functions). Times are the
 * reader's aligned nanoseconds (the hosts of a job on rank 0's clock, as convert puts them):
 * timer resolution 1e9, global offset the trace's first event.
 *
 * Order. Each thread is walked once (model.c) and its events go through a small buffer per
 * location before they are written: a complete slice (WEFT_COMPLETE) is recorded after its
 * range, so its Enter and Leave are inserted where their times fall among the buffered events,
 * moved inward where that would not nest (counted in `clamped`); one reaching back past what was
 * already written starts at that point. Slices open at the end are closed where the walker
 * closes them (the trace's end, as convert does); instants are zero-length regions.
 *
 * MPI (otf2-mpi.c). A first pass before the walk collects the messages and the communicators of
 * the processes that called MPI; the walk hands each MPI call's begin and end to it, for the
 * point-to-point and collective events it adds on the thread's own location, and the MPI
 * definitions (paradigm, groups, communicators) are written among the others.
 */
#include "export/otf2-internal.h"
#include "format/format.h"
#include <errno.h>
#include <ftw.h>
#include <otf2/otf2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BUF_RECS 65536 /* records held per location (3 MiB): how far back a complete slice may reach */

/* ---- interned strings: text -> OTF2 string id ---- */

static uint64_t shash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

uint32_t weft_otf2_str(struct strtab *t, const char *s)
{
	if (!s)
		s = "";
	if ((t->n + 1) * 2 > t->hcap) {
		size_t cap = t->hcap ? t->hcap * 2 : 1024;
		uint32_t *h = calloc(cap, sizeof(*h));
		if (!h)
			OOM();
		for (size_t i = 0; i < t->n; i++) {
			size_t k = shash(t->s[i]) & (cap - 1);
			while (h[k])
				k = (k + 1) & (cap - 1);
			h[k] = (uint32_t)i + 1;
		}
		free(t->h);
		t->h = h;
		t->hcap = cap;
	}
	size_t k = shash(s) & (t->hcap - 1);
	while (t->h[k]) {
		if (!strcmp(t->s[t->h[k] - 1], s))
			return t->h[k] - 1;
		k = (k + 1) & (t->hcap - 1);
	}
	GROW(t->s, t->n, t->cap);
	if (!(t->s[t->n] = strdup(s)))
		OOM();
	t->h[k] = (uint32_t)++t->n;
	return (uint32_t)t->n - 1;
}

uint32_t weft_otf2_strf(struct strtab *t, const char *fmt, ...)
{
	char b[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	return weft_otf2_str(t, b);
}

/* ---- locations, regions, metrics ---- */

struct locdef { uint64_t id; uint32_t name, group; uint64_t events; };

struct region { uint32_t name, cat; int role, paradigm; uint32_t file, line; };

struct metric { uint32_t name, unit; int dbl; };

void weft_otf2_fail(struct ox *x, OTF2_ErrorCode rc, const char *what)
{
	if (x->failed)
		return;
	x->failed = 1;
	snprintf(x->err, x->errlen, "OTF2: %s: %s (%s)", what, OTF2_Error_GetName(rc), OTF2_Error_GetDescription(rc));
}

/* ---- regions and metrics ---- */

static const char *site_cat(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat ? p->sites[id].cat : "";
}

static uint64_t region_hash(const struct region *r)
{
	return weft_otf2_hmix(((uint64_t)r->name << 32) ^ r->cat ^ ((uint64_t)r->paradigm << 24));
}

static uint32_t region_of(struct ox *x, uint32_t id)
{
	const struct weft_proc *p = x->p;
	if (id < p->nsites && x->site_reg[id])
		return x->site_reg[id] - 1;
	const char *name = weft_site_name(p, id), *cat = site_cat(p, id);
	if (!name)
		name = id ? "?" : "weft: events dropped";
	struct region r = {weft_otf2_str(&x->str, name), weft_otf2_str(&x->str, cat), OTF2_REGION_ROLE_FUNCTION,
			   OTF2_PARADIGM_USER, weft_otf2_str(&x->str, ""), 0};
	if (!strcmp(cat, "mpi")) {
		r.paradigm = OTF2_PARADIGM_MPI;
		r.role = weft_otf2_mpi_role(name);
	} else if (id < p->nsites && x->is_func[id]) {
		r.paradigm = OTF2_PARADIGM_COMPILER;
	}
	if (id < p->nsites && p->sites[id].defined && p->sites[id].file) {
		r.file = weft_otf2_str(&x->str, p->sites[id].file);
		r.line = p->sites[id].line;
	}
	if ((x->nreg + 1) * 2 > x->reg_hcap) {
		size_t cap = x->reg_hcap ? x->reg_hcap * 2 : 1024;
		uint32_t *h = calloc(cap, sizeof(*h));
		if (!h)
			OOM();
		for (size_t i = 0; i < x->nreg; i++) {
			size_t k = region_hash(&x->reg[i]) & (cap - 1);
			while (h[k])
				k = (k + 1) & (cap - 1);
			h[k] = (uint32_t)i + 1;
		}
		free(x->reg_h);
		x->reg_h = h;
		x->reg_hcap = cap;
	}
	size_t k = region_hash(&r) & (x->reg_hcap - 1);
	uint32_t found = 0;
	while (x->reg_h[k]) {
		const struct region *o = &x->reg[x->reg_h[k] - 1];
		if (o->name == r.name && o->cat == r.cat && o->paradigm == r.paradigm) {
			found = x->reg_h[k];
			break;
		}
		k = (k + 1) & (x->reg_hcap - 1);
	}
	if (!found) {
		GROW(x->reg, x->nreg, x->regcap);
		x->reg[x->nreg++] = r;
		found = x->reg_h[k] = (uint32_t)x->nreg;
	}
	if (id < p->nsites)
		x->site_reg[id] = found;
	return found - 1;
}

static uint32_t metric_of(struct ox *x, uint32_t id, int dbl)
{
	const struct weft_proc *p = x->p;
	if (id < p->nsites && x->site_met[id])
		return x->site_met[id] - 1;
	const char *name = weft_site_name(p, id);
	const char *unit = id < p->nsites && p->sites[id].defined && p->sites[id].unit ? p->sites[id].unit : "";
	struct metric m = {weft_otf2_str(&x->str, name ? name : "?"), weft_otf2_str(&x->str, unit), dbl};
	size_t i;
	for (i = 0; i < x->nmet; i++) /* a trace has a few dozen counters */
		if (x->met[i].name == m.name && x->met[i].unit == m.unit && x->met[i].dbl == m.dbl)
			break;
	if (i == x->nmet) {
		GROW(x->met, x->nmet, x->metcap);
		x->met[x->nmet++] = m;
	}
	if (id < p->nsites)
		x->site_met[id] = (uint32_t)i + 1;
	return (uint32_t)i;
}

/* ---- writing a location's events ---- */

static void write_rec(struct ox *x, struct loc *l, struct rec *r)
{
	if (r->ts < l->written_ts) /* never back in time on a location */
		r->ts = l->written_ts;
	l->written_ts = r->ts;
	if (r->ts > x->max_ts)
		x->max_ts = r->ts;
	if (x->failed)
		return;
	OTF2_ErrorCode rc = OTF2_SUCCESS;
	switch (r->kind) {
	case R_ENTER: rc = OTF2_EvtWriter_Enter(l->w, NULL, r->ts, r->a); break;
	case R_LEAVE: rc = OTF2_EvtWriter_Leave(l->w, NULL, r->ts, r->a); break;
	case R_SEND: rc = OTF2_EvtWriter_MpiSend(l->w, NULL, r->ts, r->a, r->b, r->c, r->d); break;
	case R_ISEND: rc = OTF2_EvtWriter_MpiIsend(l->w, NULL, r->ts, r->a, r->b, r->c, r->d, r->e); break;
	case R_IRECVREQ: rc = OTF2_EvtWriter_MpiIrecvRequest(l->w, NULL, r->ts, r->e); break;
	case R_RECV: rc = OTF2_EvtWriter_MpiRecv(l->w, NULL, r->ts, r->a, r->b, r->c, r->d); break;
	case R_IRECV: rc = OTF2_EvtWriter_MpiIrecv(l->w, NULL, r->ts, r->a, r->b, r->c, r->d, r->e); break;
	case R_CBEGIN: rc = OTF2_EvtWriter_MpiCollectiveBegin(l->w, NULL, r->ts); break;
	case R_CEND:
		rc = OTF2_EvtWriter_MpiCollectiveEnd(l->w, NULL, r->ts, (OTF2_CollectiveOp)r->a, r->b, r->c, r->d, 0);
		break;
	case R_METRIC: {
		OTF2_Type type = r->dbl ? OTF2_TYPE_DOUBLE : OTF2_TYPE_INT64;
		OTF2_MetricValue v;
		if (r->dbl)
			memcpy(&v.floating_point, &r->d, sizeof(double));
		else
			v.signed_int = (int64_t)r->d;
		rc = OTF2_EvtWriter_Metric(l->w, NULL, r->ts, r->a, 1, &type, &v);
		break;
	}
	}
	if (rc != OTF2_SUCCESS)
		weft_otf2_fail(x, rc, "writing an event");
}

static void flush_recs(struct ox *x, struct loc *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		write_rec(x, l, &l->buf[i]);
	memmove(l->buf, l->buf + n, (l->n - n) * sizeof(*l->buf));
	l->n -= n;
}

struct rec *weft_otf2_push(struct ox *x, struct loc *l, uint64_t ts, int kind)
{
	if (l->n == BUF_RECS)
		flush_recs(x, l, BUF_RECS / 2);
	struct rec *r = &l->buf[l->n++];
	memset(r, 0, sizeof(*r));
	r->ts = ts;
	r->kind = (uint8_t)kind;
	return r;
}

static void insert_at(struct loc *l, size_t at, struct rec r)
{
	memmove(l->buf + at + 1, l->buf + at, (l->n - at) * sizeof(*l->buf));
	l->buf[at] = r;
	l->n++;
}

/* A complete slice [from, to] recorded after its range: its Enter and Leave go where their times
 * fall among the buffered events, moved inward until what lies between them nests. */
static void complete(struct ox *x, struct loc *l, uint32_t region, uint64_t from, uint64_t to)
{
	if (l->n + 2 > BUF_RECS)
		flush_recs(x, l, BUF_RECS / 2);
	int moved = from < l->written_ts;
	if (from < l->written_ts)
		from = l->written_ts;
	if (to < from)
		to = from;
	size_t a = 0, b;
	while (a < l->n && (l->buf[a].ts < from || (l->buf[a].ts == from && l->buf[a].kind != R_ENTER)))
		a++;
	for (b = a; b < l->n && (l->buf[b].ts < to || (l->buf[b].ts == to && l->buf[b].kind != R_ENTER));)
		b++;
	/* the Enter after the last point where the depth is lowest, if it goes below its start */
	long d = 0, m = 0;
	size_t a2 = a;
	for (size_t i = a; i < b; i++) {
		d += l->buf[i].kind == R_ENTER ? 1 : l->buf[i].kind == R_LEAVE ? -1 : 0;
		if (d < m || (d == m && m < 0)) {
			m = d < m ? d : m;
			a2 = i + 1;
		}
	}
	/* the Leave before the first Enter that is not left before it */
	size_t b2 = a2;
	d = 0;
	for (size_t i = a2; i < b; i++) {
		d += l->buf[i].kind == R_ENTER ? 1 : l->buf[i].kind == R_LEAVE ? -1 : 0;
		if (d == 0)
			b2 = i + 1;
	}
	if (d == 0)
		b2 = b;
	uint64_t ts_in = from, ts_out = to;
	if (a2 > a)
		ts_in = l->buf[a2 - 1].ts > from ? l->buf[a2 - 1].ts : from;
	if (b2 < b && l->buf[b2].ts < to)
		ts_out = l->buf[b2].ts;
	if (ts_out < ts_in)
		ts_out = ts_in;
	if (moved || a2 != a || b2 != b)
		x->clamped++;
	insert_at(l, b2, (struct rec){.ts = ts_out, .kind = R_LEAVE, .a = region});
	insert_at(l, a2, (struct rec){.ts = ts_in, .kind = R_ENTER, .a = region});
}

static void loc_define(struct ox *x, uint64_t id, const char *name)
{
	GROW(x->locs, x->nlocs, x->loccap);
	x->locs[x->nlocs++] = (struct locdef){id, weft_otf2_str(&x->str, name), x->group, 0};
}

static struct loc *lane(struct ox *x, unsigned track)
{
	for (size_t i = 0; i < x->nlanes; i++)
		if (x->lanes[i].track == track)
			return &x->lanes[i];
	GROW(x->lanes, x->nlanes, x->lanecap);
	struct loc *l = &x->lanes[x->nlanes++];
	memset(l, 0, sizeof(*l));
	l->track = track;
	l->id = x->nlocs;
	if (!(l->buf = malloc(BUF_RECS * sizeof(*l->buf))))
		OOM();
	char name[512], tn[300];
	if (x->th->name && *x->th->name) /* threads often share their process's name: the tid tells them apart */
		snprintf(tn, sizeof(tn), "%s tid %u", x->th->name, x->th->tid);
	else
		snprintf(tn, sizeof(tn), "tid %u", x->th->tid);
	const char *track_name = track ? weft_track_name(x->p, track) : NULL;
	if (track)
		snprintf(name, sizeof(name), "%s (%s)", track_name ? track_name : "track", tn);
	else
		snprintf(name, sizeof(name), "%s", tn);
	loc_define(x, l->id, name);
	l->w = OTF2_Archive_GetEvtWriter(x->ar, l->id);
	if (!l->w && !x->failed) {
		x->failed = 1;
		snprintf(x->err, x->errlen, "OTF2: cannot open the event writer of location %llu",
			 (unsigned long long)l->id);
	}
	return l;
}

/* ---- the second pass: a thread's events ---- */

static void on_event(void *ud, const struct weft_ev *e)
{
	struct ox *x = ud;
	switch (e->kind) {
	case WEFT_EV_BEGIN: {
		struct loc *l = lane(x, e->track);
		uint32_t reg = region_of(x, e->id);
		weft_otf2_push(x, l, e->ts, R_ENTER)->a = reg;
		GROW(l->stack, l->depth, l->scap);
		l->stack[l->depth++] = reg;
		if (x->mpi && !e->track && weft_otf2_is_mpi(x->p, e->id))
			weft_otf2_mpi_begin(x, l, e);
		break;
	}
	case WEFT_EV_END: {
		struct loc *l = lane(x, e->track);
		if (!l->depth)
			break; /* the walker balances: not reached */
		if (l->nmo && l->mo[l->nmo - 1].serial == e->serial)
			weft_otf2_mpi_end(x, l, e);
		weft_otf2_push(x, l, e->ts, R_LEAVE)->a = l->stack[--l->depth];
		break;
	}
	case WEFT_EV_COMPLETE:
		complete(x, lane(x, e->track), region_of(x, e->id), e->ts, e->end_ts > e->ts ? e->end_ts : e->ts);
		break;
	case WEFT_EV_INSTANT:
	case WEFT_EV_DROPPED: {
		struct loc *l = lane(x, e->kind == WEFT_EV_INSTANT ? e->track : 0);
		uint32_t reg = region_of(x, e->kind == WEFT_EV_INSTANT ? e->id : 0);
		weft_otf2_push(x, l, e->ts, R_ENTER)->a = reg;
		weft_otf2_push(x, l, e->ts, R_LEAVE)->a = reg;
		break;
	}
	case WEFT_EV_COUNTER: {
		struct loc *l = lane(x, 0);
		struct rec *r = weft_otf2_push(x, l, e->ts, R_METRIC);
		r->a = metric_of(x, e->id, e->is_double);
		r->dbl = (uint8_t)(e->is_double != 0);
		r->d = e->value;
		break;
	}
	default:
		break;
	}
}

/* Plain function begins and ends (model.h), the bulk of a function trace, without a weft_ev. */
static size_t on_plain(void *ud, const struct weft_plain_ev *ev, size_t n)
{
	struct ox *x = ud;
	struct loc *l = lane(x, 0);
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == WEFT_EV_BEGIN) {
			if (weft_otf2_is_mpi(x->p, ev[i].id))
				return i;
			uint32_t reg = region_of(x, ev[i].id);
			weft_otf2_push(x, l, ev[i].ts, R_ENTER)->a = reg;
			GROW(l->stack, l->depth, l->scap);
			l->stack[l->depth++] = reg;
		} else {
			if (!l->depth || (l->nmo && l->mo[l->nmo - 1].serial == ev[i].serial))
				return i;
			weft_otf2_push(x, l, ev[i].ts, R_LEAVE)->a = l->stack[--l->depth];
		}
	}
	return n;
}

static void close_lanes(struct ox *x)
{
	for (size_t i = 0; i < x->nlanes; i++) {
		struct loc *l = &x->lanes[i];
		flush_recs(x, l, l->n);
		uint64_t n = 0;
		if (l->w) {
			if (OTF2_EvtWriter_GetNumberOfEvents(l->w, &n) != OTF2_SUCCESS)
				n = 0;
			CHECK(x, OTF2_Archive_CloseEvtWriter(x->ar, l->w), "closing an event writer");
		}
		x->locs[l->id].events = n;
		free(l->buf);
		free(l->stack);
		free(l->irq);
		free(l->mo);
	}
	x->nlanes = 0;
}

static void walk_proc(struct ox *x, size_t pi, struct weft_export_summary *sum)
{
	const struct weft_proc *p = &x->t->procs[pi];
	x->p = p;
	x->group = (uint32_t)pi;
	x->site_reg = calloc(p->nsites + 1, sizeof(*x->site_reg));
	x->site_met = calloc(p->nsites + 1, sizeof(*x->site_met));
	x->is_func = calloc(p->nsites + 1, 1);
	if (!x->site_reg || !x->site_met || !x->is_func)
		OOM();
	for (size_t i = 0; i < p->func_cap; i++)
		if (p->func_id && p->func_id[i] && p->func_id[i] < p->nsites)
			x->is_func[p->func_id[i]] = 1;
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t k = 0; k < p->nthreads && !x->failed; k++) {
		struct weft_walk_stats st;
		memset(&st, 0, sizeof(st));
		x->th = &p->threads[k];
		lane(x, 0); /* every thread has its location, events or not */
		weft_walk_thread_plain(p, x->th, x->t->last_ns, on_event, on_plain, x, &st, &buf, &cap);
		close_lanes(x);
		weft_export_summary_add(sum, &st);
	}
	sum->dropped += weft_proc_dropped(p);
	free(buf);
	free(x->site_reg);
	free(x->site_met);
	free(x->is_func);
}

/* ---- definitions ---- */

static void write_defs(struct ox *x, const uint64_t *first_loc)
{
	const struct weft_trace *t = x->t;
	/* every string first: ids for what the definitions below name */
	uint32_t s_root = weft_otf2_str(&x->str, "weft trace"), s_machine = weft_otf2_str(&x->str, "machine"),
		 s_node = weft_otf2_str(&x->str, "node");
	uint32_t *host_node = calloc(t->nprocs + 1, sizeof(*host_node));
	uint32_t *group_name = calloc(t->nprocs + 1, sizeof(uint32_t));
	uint32_t *hosts = calloc(t->nprocs + 1, sizeof(*hosts));
	size_t nhosts = 0;
	if (!host_node || !group_name || !hosts)
		OOM();
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		uint32_t h = weft_otf2_str(&x->str, p->host && *p->host ? p->host : "(unknown host)");
		size_t k;
		for (k = 0; k < nhosts && hosts[k] != h; k++)
			;
		if (k == nhosts)
			hosts[nhosts++] = h;
		host_node[i] = (uint32_t)k + 1;
		uint32_t r = weft_proc_rank(p);
		const char *pn = p->name ? p->name : "?";
		char suffix[32];
		snprintf(suffix, sizeof(suffix), " rank %u", r);
		size_t ln = strlen(pn), ls = strlen(suffix);
		int named = ln >= ls && !strcmp(pn + ln - ls, suffix); /* the reader names ranks so already */
		if (r != WEFT_RANK_NONE && !p->rank_carrier && !named)
			group_name[i] = weft_otf2_strf(&x->str, "%s%s", pn, suffix);
		else
			group_name[i] = weft_otf2_str(&x->str, pn);
	}
	weft_otf2_mpi_names(x);
	uint32_t s_count = weft_otf2_str(&x->str, "weft counter");
	OTF2_GlobalDefWriter *w = OTF2_Archive_GetGlobalDefWriter(x->ar);
	if (!w) {
		weft_otf2_fail(x, OTF2_ERROR_INVALID, "the global definition writer");
		goto out;
	}
	/* clock: the reader's aligned nanoseconds; wall time at the offset where recorded */
	uint64_t real = OTF2_UNDEFINED_TIMESTAMP;
	for (size_t i = 0; i < t->nprocs && real == OTF2_UNDEFINED_TIMESTAMP; i++)
		if (t->procs[i].nclock && !t->procs[i].host_index)
			real = t->procs[i].clock[0].real_ns + (t->first_ns - t->procs[i].clock[0].boot_ns);
	uint64_t length = x->max_ts > t->first_ns ? x->max_ts - t->first_ns : 0;
	CHECK(x, OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000ull, t->first_ns, length, real),
	      "clock properties");
	for (size_t i = 0; i < x->str.n; i++)
		CHECK(x, OTF2_GlobalDefWriter_WriteString(w, (uint32_t)i, x->str.s[i]), "a string");
	if (x->mpi)
		CHECK(x,
		      OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_MPI, x->s_mpi, OTF2_PARADIGM_CLASS_PROCESS),
		      "the MPI paradigm");
	CHECK(x, OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, s_root, s_machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE),
	      "the system tree");
	for (size_t k = 0; k < nhosts; k++)
		CHECK(x, OTF2_GlobalDefWriter_WriteSystemTreeNode(w, (uint32_t)k + 1, hosts[k], s_node, 0), "a host");
	for (size_t i = 0; i < t->nprocs; i++)
		CHECK(x,
		      OTF2_GlobalDefWriter_WriteLocationGroup(w, (uint32_t)i, group_name[i],
							      OTF2_LOCATION_GROUP_TYPE_PROCESS, host_node[i],
							      OTF2_UNDEFINED_LOCATION_GROUP),
		      "a location group");
	for (size_t i = 0; i < x->nlocs; i++)
		CHECK(x,
		      OTF2_GlobalDefWriter_WriteLocation(w, x->locs[i].id, x->locs[i].name,
							 OTF2_LOCATION_TYPE_CPU_THREAD, x->locs[i].events,
							 x->locs[i].group),
		      "a location");
	for (size_t i = 0; i < x->nreg; i++) {
		const struct region *r = &x->reg[i];
		CHECK(x,
		      OTF2_GlobalDefWriter_WriteRegion(w, (uint32_t)i, r->name, r->name, r->cat,
						       (OTF2_RegionRole)r->role, (OTF2_Paradigm)r->paradigm,
						       OTF2_REGION_FLAG_NONE, r->file, r->line, r->line),
		      "a region");
	}
	if (x->mpi)
		weft_otf2_mpi_defs(x, w, first_loc);
	for (size_t i = 0; i < x->nmet; i++) {
		const struct metric *mt = &x->met[i];
		OTF2_MetricMemberRef ref = (uint32_t)i;
		OTF2_Type type = mt->dbl ? OTF2_TYPE_DOUBLE : OTF2_TYPE_INT64;
		CHECK(x,
		      OTF2_GlobalDefWriter_WriteMetricMember(w, (uint32_t)i, mt->name, s_count, OTF2_METRIC_TYPE_USER,
							     OTF2_METRIC_ABSOLUTE_POINT, type, OTF2_BASE_DECIMAL, 0,
							     mt->unit),
		      "a metric member");
		CHECK(x, OTF2_GlobalDefWriter_WriteMetricClass(w, (uint32_t)i, 1, &ref, OTF2_METRIC_ASYNCHRONOUS,
							       OTF2_RECORDER_KIND_ABSTRACT),
		      "a metric class");
	}
	CHECK(x, OTF2_Archive_CloseGlobalDefWriter(x->ar, w), "closing the definitions");
out:
	free(host_node);
	free(group_name);
	free(hosts);
}

static OTF2_FlushType pre_flush(void *ud, OTF2_FileType ft, OTF2_LocationRef loc, void *cb, bool final)
{
	(void)ud, (void)ft, (void)loc, (void)cb, (void)final;
	return OTF2_FLUSH;
}
static const OTF2_FlushCallbacks flush_cbs = {.otf2_pre_flush = pre_flush, .otf2_post_flush = NULL};

/* libotf2 prints its errors unless told otherwise: the library stays silent (the calls'
 * return codes say what failed) */
static OTF2_ErrorCode quiet(void *ud, const char *file, uint64_t line, const char *fn, OTF2_ErrorCode code,
			    const char *fmt, va_list va)
{
	(void)ud, (void)file, (void)line, (void)fn, (void)fmt, (void)va;
	return code;
}

static uint64_t archive_bytes;
static int add_size(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path, (void)f;
	if (flag == FTW_F)
		archive_bytes += (uint64_t)st->st_size;
	return 0;
}

int weft_export_otf2(const struct weft_trace *t, const char *dir, struct weft_export_summary *sum, char *err,
		     size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	struct ox x;
	memset(&x, 0, sizeof(x));
	x.t = t;
	x.err = err;
	x.errlen = errlen;
	x.max_ts = t->first_ns;
	OTF2_Error_RegisterCallback(quiet, NULL);
	weft_otf2_str(&x.str, ""); /* string 0 */
	weft_otf2_mpi_scan(&x, sum);
	x.ar = OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX,
				 OTF2_COMPRESSION_NONE);
	if (!x.ar) {
		snprintf(err, errlen, "OTF2: cannot create the archive in %s", dir);
		return -EIO;
	}
	CHECK(&x, OTF2_Archive_SetFlushCallbacks(x.ar, &flush_cbs, NULL), "flush callbacks");
	CHECK(&x, OTF2_Archive_SetSerialCollectiveCallbacks(x.ar), "collective callbacks");
	CHECK(&x, OTF2_Archive_SetCreator(x.ar, "weft"), "the creator");
	CHECK(&x, OTF2_Archive_SetDescription(x.ar, t->dir ? t->dir : ""), "the description");
	CHECK(&x, OTF2_Archive_OpenEvtFiles(x.ar), "opening the event files");
	uint64_t *first_loc = calloc(t->nprocs + 1, sizeof(*first_loc));
	if (!first_loc)
		OOM();
	for (size_t i = 0; i < t->nprocs && !x.failed; i++) {
		first_loc[i] = x.nlocs;
		walk_proc(&x, i, sum);
	}
	if (!x.failed)
		CHECK(&x, OTF2_Archive_CloseEvtFiles(x.ar), "closing the event files");
	if (!x.failed) { /* local definitions: none, but readers expect each location's file */
		CHECK(&x, OTF2_Archive_OpenDefFiles(x.ar), "opening the definition files");
		for (size_t i = 0; i < x.nlocs && !x.failed; i++) {
			OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(x.ar, x.locs[i].id);
			if (dw)
				CHECK(&x, OTF2_Archive_CloseDefWriter(x.ar, dw), "a location's definitions");
		}
		CHECK(&x, OTF2_Archive_CloseDefFiles(x.ar), "closing the definition files");
	}
	if (!x.failed)
		write_defs(&x, first_loc);
	OTF2_ErrorCode crc = OTF2_Archive_Close(x.ar);
	if (crc != OTF2_SUCCESS)
		weft_otf2_fail(&x, crc, "closing the archive");
	int rc = x.failed ? -EIO : 0;
	if (!rc) {
		uint64_t n = 0;
		for (size_t i = 0; i < x.nlocs; i++)
			n += x.locs[i].events;
		sum->records = n;
		sum->locations = x.nlocs;
		sum->clamped = x.clamped;
		sum->unmapped = x.unmapped;
		archive_bytes = 0;
		nftw(dir, add_size, 16, FTW_PHYS);
		sum->bytes = archive_bytes;
	}
	for (size_t i = 0; i < x.str.n; i++)
		free(x.str.s[i]);
	free(x.str.s);
	free(x.str.h);
	free(x.reg);
	free(x.reg_h);
	free(x.met);
	free(x.locs);
	free(x.lanes);
	weft_otf2_mpi_free(&x);
	free(first_loc);
	return weft_export_result(sum, rc, err, errlen);
}
