/*
 * api.c - the out-of-line event calls: events with arguments (one reservation for the event
 * and all its argument records, so an event is kept or dropped whole), complete slices with
 * arguments, flows, and the rate
 * counter. Still lock-free and allocation-free; only the first use of a key registers it.
 */
#include "internal.h"
#include "../collect/counters.h"
#include <string.h>

#define MAX_STR 1024

static size_t arg_words(const struct weft_arg *a)
{
	if (a->type != WEFT_R_ARG_STR)
		return 2;
	size_t n = a->v.s ? strnlen(a->v.s, MAX_STR) : 0;
	return 2 + (n + 7) / 8;
}

/* One reservation for the event record (`w0`, its header, `extra` words from `xw`) and the
 * records of its arguments: the event is kept or dropped whole. */
static void event_with_args(struct weft_site *s, unsigned type, unsigned track, uint64_t w0,
			    const uint64_t *xw, unsigned extra, const struct weft_arg *args, unsigned nargs)
{
	size_t words = 2 + extra;
	unsigned keep = 0;
	uint32_t ids[16];
	for (unsigned i = 0; i < nargs && keep < 16; i++) {
		if (!args[i].key || !weft__on(args[i].key))
			continue;
		ids[keep++] = args[i].key->id;
		words += arg_words(&args[i]);
	}
	uint64_t *p = weft__reserve(words * 8);
	if (!p)
		return;
	uint64_t *w = p;
	w[0] = w0;
	w[1] = weft__hdr(s->id, type, extra, track);
	for (unsigned i = 0; i < extra; i++)
		w[2 + i] = xw[i];
	w += 2 + extra;
	unsigned k = 0;
	for (unsigned i = 0; i < nargs && k < keep; i++) {
		const struct weft_arg *a = &args[i];
		if (!a->key || a->key->id != ids[k])
			continue;
		k++;
		if (a->type == WEFT_R_ARG_STR) {
			size_t n = a->v.s ? strnlen(a->v.s, MAX_STR) : 0;
			unsigned ex = (unsigned)((n + 7) / 8);
			w[0] = n;
			w[1] = weft__hdr(a->key->id, WEFT_R_ARG_STR, ex, 0);
			if (n) {
				w[1 + ex] = 0; /* zero the tail of the last word */
				memcpy(w + 2, a->v.s, n);
			}
			w += 2 + ex;
		} else {
			w[0] = a->v.u;
			w[1] = weft__hdr(a->key->id, a->type, 0, 0);
			w += 2;
		}
	}
	weft__commit(p + words);
}

void weft_event_args(struct weft_site *s, unsigned type, unsigned track,
		     const struct weft_arg *args, unsigned nargs)
{
	if (type == WEFT_R_BEGIN && __builtin_expect(weft__tls.nctr != 0, 0)) { /* counters= */
		uint64_t v[WEFT_CTR_MAX], t = weft__ticks();
		int n = weft_counters_read(v);
		event_with_args(s, type, track, t, v, (unsigned)n, args, nargs);
		return;
	}
	event_with_args(s, type, track, weft__ticks(), NULL, 0, args, nargs);
}

void weft_complete_args(struct weft_site *s, uint64_t start_ns, uint64_t end_ns, unsigned track,
			const struct weft_arg *args, unsigned nargs)
{
	if (!weft__on(s))
		return;
	event_with_args(s, WEFT_R_COMPLETE, track, start_ns, &end_ns, 1, args, nargs);
}

static void flow(unsigned type, uint64_t id)
{
	uint64_t *p = weft__reserve(16);
	if (!p)
		return;
	p[0] = id;
	p[1] = weft__hdr(0, type, 0, 0);
	weft__commit(p + 2);
}

void weft_flow_out(uint64_t id)
{
	if (atomic_load_explicit(&weft_g.run, memory_order_relaxed) == WEFT_RUN_ON)
		flow(WEFT_R_FLOW_OUT, id);
}

void weft_flow_in(uint64_t id)
{
	if (atomic_load_explicit(&weft_g.run, memory_order_relaxed) == WEFT_RUN_ON)
		flow(WEFT_R_FLOW_IN, id);
}

/* Rate: the thread that finds 100 ms passed since the last point claims it with a CAS and
 * emits count/interval as a double counter point. The interval in ticks is refreshed from the
 * calibration at every point. */
static _Atomic uint64_t rate_interval; /* ticks per 100 ms; 0 until first measured */
static struct weft_rate *_Atomic rates; /* every rate used: pushed by its first call */

/* At stop: each rate's count since its last point becomes a final point. */
void weft_rates_flush(void)
{
	double tpn = weft_ticks_per_ns();
	for (struct weft_rate *r = atomic_load(&rates); r; r = r->next) {
		uint64_t count = __atomic_exchange_n(&r->count, 0, __ATOMIC_RELAXED);
		uint64_t now = weft__ticks(), last = __atomic_exchange_n(&r->last, now, __ATOMIC_RELAXED);
		if (!count || !r->site.id || now <= last || tpn <= 0)
			continue;
		double rate = (double)count / ((double)(now - last) / tpn / 1e9);
		weft__rec3(weft__hdr(r->site.id, WEFT_R_COUNTER_F64, 1, 0), weft__d2w(rate));
	}
}

void weft_rate_add(struct weft_rate *r, uint64_t n)
{
	if (!weft__on(&r->site))
		return;
	__atomic_fetch_add(&r->count, n, __ATOMIC_RELAXED);
	uint64_t now = weft__ticks();
	uint64_t last = __atomic_load_n(&r->last, __ATOMIC_RELAXED);
	if (last == 0) {
		/* the first call: the thread that sets `last` puts the rate on the list */
		if (__atomic_compare_exchange_n(&r->last, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			struct weft_rate *head = atomic_load(&rates);
			do
				r->next = head;
			while (!atomic_compare_exchange_weak(&rates, &head, r));
		}
		return;
	}
	uint64_t interval = atomic_load_explicit(&rate_interval, memory_order_relaxed);
	if (interval && now - last < interval)
		return;
	double tpn = weft_ticks_per_ns();
	atomic_store_explicit(&rate_interval, (uint64_t)(tpn * 1e8), memory_order_relaxed);
	if (now - last < (uint64_t)(tpn * 1e8))
		return;
	if (!__atomic_compare_exchange_n(&r->last, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	uint64_t count = __atomic_exchange_n(&r->count, 0, __ATOMIC_RELAXED);
	double rate = (double)count / ((double)(now - last) / tpn / 1e9);
	weft__rec3(weft__hdr(r->site.id, WEFT_R_COUNTER_F64, 1, 0), weft__d2w(rate));
}
