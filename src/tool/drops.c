/*
 * drops.c - see drops.h. A normal recording drops an event when its thread needs a new chunk
 * and every buffer is taken (overflow=drop, the default): the writers fell behind. Either they
 * were busy all along (packing and compressing is slower than the program records: then less
 * work per event, or another writer, keeps up) or they were not (a burst filled the buffers, or
 * the machine gave them no CPU: then more buffer, or waiting, does); the line gives the
 * writers' busy share of the run and every option, since which case it was is not certain
 * from the totals. overflow=block always keeps every event: the program waits instead.
 *
 * The other cause: an event of a signal handler that interrupted another event of its thread
 * (weft__reserve's window) cannot be written inside it and is dropped and counted, by the
 * runtime's total only (a thread's count is its buffer drops). Where the threads' counts do not
 * add up to the total, the rest is that, and the line says so: no option or buffer keeps those
 * (the allocation recorder queues a handler's records, up to 8 calls a record: memnested.c).
 */
#include "tool/drops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of KEY in an options string "k=v:k=v", or NULL. */
static const char *option(const char *opts, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);
	for (const char *s = opts; s && *s;) {
		const char *e = strchr(s, ':');
		size_t l = e ? (size_t)(e - s) : strlen(s);
		if (l > kl && !strncmp(s, key, kl) && s[kl] == '=') {
			snprintf(buf, n, "%.*s", (int)(l - kl - 1), s + kl + 1);
			return buf;
		}
		s = e ? e + 1 : NULL;
	}
	return NULL;
}

/* The events signal handlers made inside another event of their thread: the total's share that
 * no thread's count holds. */
static void handlers_hint(const struct weft_proc *p, uint64_t inside, int alone, char *out, size_t n)
{
	char mem[96] = "", count[64] = "";
	if (p->mem_nested_lost)
		snprintf(mem, sizeof(mem), " (%u allocation calls among them)", p->mem_nested_lost);
	if (!alone)
		snprintf(count, sizeof(count), "; %llu of them: ", (unsigned long long)inside);
	snprintf(out, n, "%ssignal handlers' events inside another event of their thread%s, which cannot be "
		 "written there; not a buffer shortage", count, mem);
}

void weft_drops_hint(const struct weft_proc *p, char *out, size_t n)
{
	*out = 0;
	if (!p->finished || !p->fin[1] || p->write_errno)
		return;
	uint64_t buffers = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		buffers += p->threads[i].dropped;
	uint64_t inside = p->fin[1] > buffers ? p->fin[1] - buffers : 0;
	if (!buffers) {
		handlers_hint(p, inside, 1, out, n);
		return;
	}
	char b[64];
	const char *v = option(p->options, "overflow", b, sizeof(b));
	if (v && !strcmp(v, "block")) {
		if (inside)
			handlers_hint(p, inside, 1, out, n);
		return; /* (dropped only where the program's threads could not wait) */
	}
	int writers = (v = option(p->options, "writers", b, sizeof(b))) ? atoi(v) : 1;
	int level = (v = option(p->options, "compression", b, sizeof(b))) ? atoi(v) : 1;
	writers = writers > 0 ? writers : 1;
	uint64_t span = p->fin[6] > p->start_ns ? p->fin[6] - p->start_ns : 0;
	char busy[96] = "", buf[32] = "256M", more[96] = "";
	if (p->has_overhead && span)
		snprintf(busy, sizeof(busy), ", busy %.0f%% of the run,", 100.0 * (double)p->writer_cpu_ns /
			 ((double)span * writers));
	if ((v = option(p->options, "buffer_size", b, sizeof(b))))
		snprintf(buf, sizeof(buf), "%s", v);
	if (level)
		snprintf(more, sizeof(more), ", compression=0 (less work per event; larger files)");
	int l = snprintf(out, n, "the writer%s%s did not keep up; kept by --options overflow=block (the program "
			 "waits), a larger buffer_size (bursts; now %s)%s, writers=%d (where a core is free)",
			 writers == 1 ? "" : "s", busy, buf, more, writers + 1);
	if (inside && l > 0 && (size_t)l < n)
		handlers_hint(p, inside, 0, out + l, n - (size_t)l);
}
